// Package api is the contract between custos' workflow and its activity
// workers: the task queues and activity names, each activity's request and
// result types, the error types the workflow tells apart, and the few pure
// rules both sides must apply alike (which tools exist, how long a Bash call
// may run, how a call is summarised, how many tokens a prompt is, which
// queue a workspace's calls go to). What crosses the wire between the two
// is declared here, as go.temporal.io/api declares what crosses it between
// an SDK and the Temporal server.
//
// It does no I/O. The workflow package imports it instead of package
// activities (the implementations: files, processes, the sandbox, HTTP), so
// workflow code, and a replay of it, needs only itself and these names. Of
// its own imports only go-openai holds I/O code: the chat message types
// used here share a package with the HTTP client, which only activities
// build. internal/archtest holds both packages to that.
package api

import (
	"encoding/json"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/approval"
)

// Task queues. Bash runs on lanes named BashTaskQueue-N (see BashLaneQueue),
// each served one activity at a time.
const (
	TaskQueue     = "custos"
	BashTaskQueue = "custos-bash"
)

// Activity names as registered on the worker.
const (
	ModelActivity        = "Model"
	CompactActivity      = "Compact" // summarises the older part of a job's conversation
	ReadActivity         = "Read"
	GlobActivity         = "Glob"
	GrepActivity         = "Grep"
	WriteActivity        = "Write"
	EditActivity         = "Edit"
	BashActivity         = "Bash"
	LSPActivity          = "LSP"     // a language server's answer about a position in a file
	PreviewActivity      = "Preview" // the dry run of a Write or Edit waiting for approval
	HooksActivity        = "RunHooks"
	LoadSettingsActivity = "LoadSettings"
	SaveSessionActivity  = "SaveSession"
	PersistRuleActivity  = "PersistRule"
	BashLaneActivity     = "BashLane" // names the lane a workspace's commands run on
	// VerifyAnswerActivity checks the identity a channel signed for an
	// answer to a call that needs N approvals (internal/answerkey).
	VerifyAnswerActivity = "VerifyAnswer"
)

// Application error types of activity failures the workflow tells apart.
const (
	// ModelRequestErrorType is the application error type of a model call
	// that must not be retried (a 4xx other than 408, 409 and 429: bad
	// request, bad key, unknown model, context too long).
	ModelRequestErrorType = "ModelRequestError"
	// ModelRefusedErrorType is a model call the endpoint refuses for a
	// reason the operator can fix (401 bad key, 403, 404 unknown model,
	// 402 or 429 insufficient_quota): the job parks and calls again with a
	// capped backoff, or at once on the retry Update.
	ModelRefusedErrorType = "ModelRefused"
	// ModelGarbageErrorType is an answer that is not a chat completion (a
	// body that is not JSON, no choices, an empty message): transient, and
	// retried by the workflow so that status shows each attempt.
	ModelGarbageErrorType = "ModelGarbage"
	// ContextLengthErrorType is a model call refused because the prompt is
	// over the model's context window (HTTP 400, code
	// context_length_exceeded): the job compacts its conversation and calls
	// again.
	ContextLengthErrorType = "ContextLengthExceeded"
	// CompactedNothingType is a compaction that could not shorten the
	// prompt: the most recent turn alone is over what may be kept.
	CompactedNothingType = "NothingToCompact"
	// TranscriptErrorType is the error of a transcript that does not hold
	// the conversation the job expects (a file deleted or edited by hand):
	// the job cannot rebuild the conversation, so retrying does not help.
	TranscriptErrorType = "TranscriptError"
	// DiskFullErrorType is a save of the transcript or audit refused
	// because the file system holding custos' state directory is full
	// (ENOSPC) or over quota (EDQUOT). Retrying at once does not help; the
	// job parks, runs no tool call, and saves again with a backoff until
	// space is back.
	DiskFullErrorType = "DiskFull"
)

// ModelFailure is the detail of a ModelRefused error: the HTTP status and
// the endpoint's error code, for the workflow to say what to fix.
type ModelFailure struct {
	Status int    `json:"status"`
	Code   string `json:"code,omitempty"`
	Model  string `json:"model,omitempty"`
}

// DefaultMaxOutput is how many bytes of one tool's output are kept in history.
const DefaultMaxOutput = 30000

// ToolRequest is the input of every tool activity.
type ToolRequest struct {
	JobID     string          `json:"jobId"`
	CallID    string          `json:"callId"`
	Workspace string          `json:"workspace"`
	Input     json.RawMessage `json:"input"`
	// Sandbox carries the job's sandbox settings (Bash only).
	Sandbox approval.SandboxSettings `json:"sandbox,omitempty"`
	// ReadDeny and EditDeny are the path patterns of the job's Read and
	// Edit deny rules (approval.Policy.SandboxDenies): Bash masks them in
	// the sandbox, Glob and Grep leave Read-denied files out.
	ReadDeny []string `json:"readDeny,omitempty"`
	EditDeny []string `json:"editDeny,omitempty"`
	// Unconfined says the pipeline knew this Bash command would run without
	// OS isolation and a person approved it as such; only then, and with
	// sandbox.allowUnsandboxed, does a worker without a sandbox run it.
	Unconfined bool `json:"unconfined,omitempty"`
	// LSP is the job's language servers by language (settings' "lsp"; LSP
	// only): a language it names uses that command, an empty one none.
	LSP map[string][]string `json:"lsp,omitempty"`
	// MaxOutput caps Output; 0 means DefaultMaxOutput.
	MaxOutput int `json:"maxOutput,omitempty"`
	// Blobs is the job's BlobDir, where the large contents of Input are
	// (see BlobDir); "" means the one of a job whose files are in the
	// workspace.
	Blobs string `json:"blobs,omitempty"`
	// Turn is the job's turn (State.Turn) the call belongs to, and
	// Checkpoints the job's CheckpointDir: Write, Edit and Bash record
	// there what they change before they change it ("" records nothing).
	Turn        int    `json:"turn,omitempty"`
	Checkpoints string `json:"checkpoints,omitempty"`
}

// ToolResult is what a tool gives back to the model. A tool that fails on its
// input (bad arguments, missing file, path outside the workspace) returns a
// ToolResult with IsError set and a nil error: that is a result for the model,
// not an activity failure.
type ToolResult struct {
	Output    string `json:"output"`
	IsError   bool   `json:"isError,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	// ExitCode is set by Bash.
	ExitCode *int `json:"exitCode,omitempty"`
	// HostConfig is set by Bash: what the command left for tools on the
	// host to run (git hooks, config naming programs, repository pointers)
	// and what custos did with it, one line each, for the job's record.
	HostConfig []string `json:"hostConfig,omitempty"`
	// Previous is set by Write: the file's content before it, when the
	// file existed and held at most MaxDiffText bytes (for the change's
	// diff in the job's events; nothing decides on it).
	Previous *string `json:"previous,omitempty"`
	// Existed is set by Write: the file was there before.
	Existed bool `json:"existed,omitempty"`
}

// ModelRequest is one chat completion call. The conversation is read from
// the job's transcript (Conversation); Messages, sent whole, is what jobs
// recorded before the transcript store sent, and what tests may send.
type ModelRequest struct {
	Conversation *Conversation                  `json:"conversation,omitempty"`
	Messages     []openai.ChatCompletionMessage `json:"messages,omitempty"`
	Tools        []openai.Tool                  `json:"tools,omitempty"`
	// WithTools offers the model custos' tools (activities.ToolDefinitions),
	// which the activity adds itself so they do not travel in every request.
	WithTools bool `json:"withTools,omitempty"`
	// Model overrides the worker's configured model name when set.
	Model string `json:"model,omitempty"`
	// Task, when set, also offers the Task tool, listing its subagents;
	// Restrict offers only the tools named in Only (a subagent's).
	Task     *TaskOffer `json:"task,omitempty"`
	Restrict bool       `json:"restrict,omitempty"`
	Only     []string   `json:"only,omitempty"`
}

// ModelResponse is the assistant's answer and what it cost.
type ModelResponse struct {
	Message      openai.ChatCompletionMessage `json:"message"`
	Usage        openai.Usage                 `json:"usage"`
	FinishReason string                       `json:"finishReason,omitempty"`
}
