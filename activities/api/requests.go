package api

import (
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/hooks"
)

// LoadSettingsRequest names the workspace whose settings a job uses.
type LoadSettingsRequest struct {
	Workspace string `json:"workspace"`
	// JobID names the job, whose files LoadSettingsResult.Files names.
	JobID string `json:"jobId,omitempty"`
	// WorkDir is the job's working directory relative to the workspace
	// ("" or "." for the root): instructions are read down to it.
	WorkDir string `json:"workDir,omitempty"`
	// Resume asks what the job's transcript holds, for a job that goes on
	// from an earlier, ended run of the same name (LoadSettingsResult.Resumed).
	Resume bool `json:"resume,omitempty"`
	// EditorServers name the MCP servers an editor passed the job
	// (JobInput.EditorServers): their entries are read from the job's
	// file on this host, and named in the notes when it has none.
	EditorServers []string `json:"editorServers,omitempty"`
}

// Resumed is what an ended job's transcript and audit hold, for the run
// that continues it.
type Resumed struct {
	// Messages is how many messages the transcript holds; Tokens an
	// estimate of their size; LastAnswer the model's last answer.
	Messages   int    `json:"messages"`
	Tokens     int    `json:"tokens"`
	LastAnswer string `json:"lastAnswer,omitempty"`
	// AuditSeq is the audit file's last sequence number.
	AuditSeq int `json:"auditSeq"`
	// Unanswered are tool calls of the last answer that have no result
	// (the job ended before they ran): the conversation needs one each.
	Unanswered []openai.ToolCall `json:"unanswered,omitempty"`
}

// LoadSettingsResult is the merged settings plus what layers 1-3 need to know
// about the machine, recorded in history so the workflow stays deterministic.
type LoadSettingsResult struct {
	Settings approval.Settings `json:"settings"`
	Env      approval.Env      `json:"env"`
	Sources  []string          `json:"sources,omitempty"`
	// Trusted tells whether the workspace's own settings were taken in full;
	// Ignored names what they asked for and did not get (settingsfile.Load).
	Trusted bool     `json:"trusted"`
	Ignored []string `json:"ignored,omitempty"`
	// Notifiers name the channels this worker announces pending calls on.
	Notifiers []string `json:"notifiers,omitempty"`
	// BashQueue is the lane of the workspace (see BashLaneQueue).
	BashQueue string `json:"bashQueue,omitempty"`
	// ContextWindow is the worker's model's context window in tokens.
	ContextWindow int `json:"contextWindow,omitempty"`
	// Files are where the job's transcript and audit go on this host
	// (created, owner-only); empty when the request named no job.
	Files JobFiles `json:"files,omitzero"`
	// Instructions are the project's instructions for the model; Host what
	// it is told of the machine.
	Instructions Instructions `json:"instructions,omitzero"`
	Host         HostFacts    `json:"host,omitzero"`
	// Resumed is set when the request asked to resume and the job has a
	// transcript.
	Resumed *Resumed `json:"resumed,omitempty"`
	// MCPServers name the MCP servers the job may use (never their
	// entries); MCPNotes say which were left out and why.
	MCPServers []string `json:"mcpServers,omitempty"`
	MCPNotes   []string `json:"mcpNotes,omitempty"`
	// Subagents are the subagents defined as files (activities/subagents.go);
	// SubagentNotes say which files were skipped and why.
	Subagents     []Subagent `json:"subagents,omitempty"`
	SubagentNotes []string   `json:"subagentNotes,omitempty"`
}

// PersistRuleRequest is an Always/Never answer to save.
type PersistRuleRequest struct {
	Workspace string `json:"workspace"`
	List      string `json:"list"`
	Rule      string `json:"rule"`
}

// HookRequest is the input of RunHooks: the hooks the workflow selected for the
// point and tool (hooks.Config.CommandHooks, in order), what they receive, and
// the workspace they run in.
type HookRequest struct {
	Hooks   []hooks.CommandHook `json:"hooks"`
	Payload hooks.Payload       `json:"payload"`
	Dir     string              `json:"dir"`
	// Blobs is the job's BlobDir: the large contents of Payload.Input are
	// read back from it for the hooks ("": see ToolRequest.Blobs).
	Blobs string `json:"blobs,omitempty"`
}

// HookResponse is the first non-empty result (Decided reports whether there was
// one) and every hook's outcome, for the audit.
type HookResponse struct {
	Result   hooks.Result    `json:"result"`
	Decided  bool            `json:"decided"`
	Outcomes []hooks.Outcome `json:"outcomes"`
}

// PreviewResult is what a Write or Edit would change.
type PreviewResult struct {
	// Diff is a unified diff against the file as it is now ("" when the
	// call would change nothing).
	Diff string `json:"diff,omitempty"`
	// Omitted counts diff lines left out to keep the preview readable.
	Omitted int `json:"omitted,omitempty"`
	// Note says what the call would do when there is no diff to show.
	Note string `json:"note,omitempty"`
	// Failed says why the call would fail: a person may deny knowing that.
	Failed string `json:"failed,omitempty"`
}

// Text renders the preview for a person.
func (r PreviewResult) Text() string {
	switch {
	case r.Failed != "":
		return "Dry run failed — the call would fail as it stands:\n" + r.Failed
	case r.Diff == "":
		return r.Note
	}
	s := r.Diff
	if r.Omitted > 0 {
		s += fmt.Sprintf("… %d more diff lines not shown\n", r.Omitted)
	}
	if r.Note != "" {
		s = r.Note + "\n" + s
	}
	return strings.TrimSuffix(s, "\n")
}

// PreviewRequest names the tool whose call is previewed.
type PreviewRequest struct {
	Tool string      `json:"tool"`
	Call ToolRequest `json:"call"`
}

// VerifyAnswerRequest is an answer whose person a channel vouches for:
// the claim and the channel's signature of it.
type VerifyAnswerRequest struct {
	Job, Call, Decision, Channel string
	ID                           string
	Groups                       []string
	Sig                          string
}
