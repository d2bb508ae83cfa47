package api

import (
	"encoding/json"
	"path/filepath"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/internal/filename"
)

// The conversation of a job lives in its transcript (JobFiles.Transcript, in
// custos' state directory on the workspace's host), one message per line with its sequence number (seq 1 is the
// system prompt, seq 2 the task). The workflow keeps only what the file may
// not hold yet and sends that with each model call (Conversation), which
// the activity appends before reading the conversation back.

// Conversation names a job's stored conversation and what the model sees.
type Conversation struct {
	Workspace string `json:"workspace"`
	JobID     string `json:"jobId"`
	// Files are where the job's transcript is; empty for jobs that began
	// before transcripts left the workspace (see JobFiles.Or).
	Files JobFiles `json:"files,omitzero"`
	// Append are messages that may not be in the transcript yet: message
	// i has seq FirstSeq+i. Those already there are skipped.
	FirstSeq int                            `json:"firstSeq,omitempty"`
	Append   []openai.ChatCompletionMessage `json:"append,omitempty"`
	// Total is how many messages the conversation has (the last seq).
	Total int `json:"total"`
	// View is the part of the conversation the model sees.
	View View `json:"view"`
}

// View is what the model is sent after compaction: the system prompt and the
// task (seqs 1 and 2), the summary message (SummarySeq, 0 for none), then
// every message from seq From (0: from seq 3) on, other summaries left out.
type View struct {
	SummarySeq int `json:"summarySeq,omitempty"`
	From       int `json:"from,omitempty"`
}

// CompactionName marks a summary message in the transcript.
const CompactionName = "compaction"

// VisibleCount is how many of a transcript's total messages Visible sends:
// all of them until a compaction, then the system prompt, the task, the
// summary and the messages kept verbatim (earlier summaries lie before From).
func (v View) VisibleCount(total int) int {
	if v.SummarySeq == 0 && v.From <= 3 {
		return total
	}
	from := max(v.From, 3)
	n := min(2, total) + max(total-from+1, 0)
	if v.SummarySeq > 0 && v.SummarySeq <= total && v.SummarySeq < from {
		n++ // the summary, placed after the task (within the kept part it is counted already)
	}
	return n
}

// Visible is the part of msgs the model sees under the view.
func (v View) Visible(msgs []openai.ChatCompletionMessage) []openai.ChatCompletionMessage {
	if v.SummarySeq == 0 && v.From <= 3 {
		return msgs
	}
	out := append([]openai.ChatCompletionMessage(nil), msgs[:min(2, len(msgs))]...)
	if v.SummarySeq > 0 && v.SummarySeq <= len(msgs) {
		out = append(out, msgs[v.SummarySeq-1])
	}
	for i := max(v.From, 3) - 1; i < len(msgs); i++ {
		if msgs[i].Name == CompactionName && msgs[i].Role == openai.ChatMessageRoleUser {
			continue
		}
		out = append(out, msgs[i])
	}
	return out
}

// SaveSessionRequest carries what a job has not yet written to its files.
type SaveSessionRequest struct {
	Workspace string   `json:"workspace"`
	JobID     string   `json:"jobId"`
	Files     JobFiles `json:"files,omitzero"`
	// FirstMessage is the index (in the whole conversation) of Messages[0].
	FirstMessage int                            `json:"firstMessage"`
	Messages     []openai.ChatCompletionMessage `json:"messages,omitempty"`
	Audit        []approval.AuditRecord         `json:"audit,omitempty"`
}

// JobFiles are where a job's transcript and audit trail are written on the
// workspace's host: in custos' state directory, per workspace, owner-only
// (JobFilesIn), so nothing of them is in the user's repository for git to
// take, for the model's tools to list or for a sandboxed command to change.
// The host's LoadSettings activity names them when the job starts; the job
// carries them and hands them to every activity that reads or writes them.
type JobFiles struct {
	Transcript string `json:"transcript,omitempty"`
	Audit      string `json:"audit,omitempty"`
}

// Or is f, or, for a job that began before transcripts left the workspace
// (its files were never named), where such a job wrote them: it goes on
// there, so an older job keeps its whole conversation in one file.
func (f JobFiles) Or(workspace, jobID string) JobFiles {
	if f.Transcript != "" && f.Audit != "" {
		return f
	}
	return JobFiles{Transcript: SessionFile(workspace, jobID), Audit: AuditFile(workspace, jobID)}
}

// JobFilesIn are the files of job jobID under the workspace's directory
// in custos' state directory (statedir.WorkspaceDir).
func JobFilesIn(wsState, jobID string) JobFiles {
	return JobFiles{
		Transcript: filepath.Join(wsState, "sessions", filename.Safe(jobID)+".jsonl"),
		Audit:      filepath.Join(wsState, "audit", filename.Safe(jobID)+".jsonl"),
	}
}

// SessionFile is where jobs that began before transcripts left the
// workspace keep theirs, in the workspace (see JobFiles.Or).
func SessionFile(workspace, jobID string) string {
	return filepath.Join(workspace, ".custos", "sessions", filename.Safe(jobID)+".jsonl")
}

// AuditFile is where such a job keeps its audit trail.
func AuditFile(workspace, jobID string) string {
	return filepath.Join(workspace, ".custos", "audit", filename.Safe(jobID)+".jsonl")
}

// CompactRequest asks for a compaction of the conversation.
type CompactRequest struct {
	Conversation Conversation `json:"conversation"`
	// Window is the model's context window in tokens; KeepTokens how much
	// of it the most recent turns may keep verbatim.
	Window     int    `json:"window"`
	KeepTokens int    `json:"keepTokens"`
	Model      string `json:"model,omitempty"`
}

// CompactResult is the new view of the conversation. The summary is the
// transcript message SummarySeq (the conversation now has SummarySeq
// messages); From is the first message kept verbatim.
type CompactResult struct {
	View View `json:"view"`
	// Message is the summary as stored in the transcript.
	Message   openai.ChatCompletionMessage `json:"message"`
	Summary   string                       `json:"summary"`
	Compacted int                          `json:"compacted"` // messages summarised this time
	// Before and After estimate the prompt in tokens.
	Before int `json:"before"`
	After  int `json:"after"`
}

// EstimateTokens estimates the prompt tokens of messages the way
// OpenAI-compatible servers roughly count them: about four bytes a token of
// the messages as sent.
func EstimateTokens(msgs ...openai.ChatCompletionMessage) int {
	b, _ := json.Marshal(msgs)
	return len(b)/4 + 1
}

// contextWindows are the context windows of well-known models, by name
// prefix (longest first wins).
var contextWindows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4.1", 1047576}, {"gpt-4o", 128000}, {"gpt-4-turbo", 128000}, {"gpt-4", 8192}, {"gpt-3.5-turbo", 16385},
	{"gpt-5", 400000}, {"o1", 200000}, {"o3", 200000}, {"o4-mini", 200000},
	{"claude", 200000}, {"gemini", 1048576}, {"llama3.1", 128000}, {"llama-3.1", 128000}, {"llama3", 8192},
	{"qwen2.5", 32768}, {"mistral", 32768}, {"deepseek", 128000},
}

// DefaultContextWindow is the window of a model the table does not know.
const DefaultContextWindow = 128000

// ContextWindowFor is the context window of a model, from the table of
// well-known names, else DefaultContextWindow.
func ContextWindowFor(model string) int {
	best, tokens := 0, DefaultContextWindow
	m := strings.ToLower(model)
	for _, w := range contextWindows {
		if strings.HasPrefix(m, w.prefix) && len(w.prefix) > best {
			best, tokens = len(w.prefix), w.tokens
		}
	}
	return tokens
}
