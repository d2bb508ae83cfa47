// Package activities holds everything custos does with side effects: the model
// call, the tools, hook runners, settings loading, the transcript and audit sinks.
package activities

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
	ReadActivity         = "Read"
	GlobActivity         = "Glob"
	GrepActivity         = "Grep"
	WriteActivity        = "Write"
	EditActivity         = "Edit"
	BashActivity         = "Bash"
	HooksActivity        = "RunHooks"
	LoadSettingsActivity = "LoadSettings"
	SaveSessionActivity  = "SaveSession"
	PersistRuleActivity  = "PersistRule"
)

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
	// MaxOutput caps Output; 0 means DefaultMaxOutput.
	MaxOutput int `json:"maxOutput,omitempty"`
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
}

// ModelRequest is one chat completion call. The conversation is read from
// the job's transcript (Conversation); Messages, sent whole, is what jobs
// recorded before the transcript store sent, and what tests may send.
type ModelRequest struct {
	Conversation *Conversation                  `json:"conversation,omitempty"`
	Messages     []openai.ChatCompletionMessage `json:"messages,omitempty"`
	Tools        []openai.Tool                  `json:"tools,omitempty"`
	// WithTools offers the model custos' tools (ToolDefinitions), which the
	// activity adds itself so they do not travel in every request.
	WithTools bool `json:"withTools,omitempty"`
	// Model overrides the worker's configured model name when set.
	Model string `json:"model,omitempty"`
}

// ModelResponse is the assistant's answer and what it cost.
type ModelResponse struct {
	Message      openai.ChatCompletionMessage `json:"message"`
	Usage        openai.Usage                 `json:"usage"`
	FinishReason string                       `json:"finishReason,omitempty"`
}
