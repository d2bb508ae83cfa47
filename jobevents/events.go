// Package jobevents is the one vocabulary of what a job does, as its
// followers see it: the job, the model's text as it is written, tool calls,
// decisions and the layer that made them, waits for a person, results,
// answers, parks, errors and, last, the job's result. A Source produces the
// events once, from the workflow's bounded journal (the "events" query) and
// the model's live text (package stream, in this process or relayed from the
// worker that runs the model call); the terminal, `starter run --json`, the
// editor's ACP updates and the approval page render them and derive none of
// their own. Nothing here is recorded: history keeps the final messages.
package jobevents

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Event is one of the types below. Type is its "type" in JSON.
type Event interface{ Type() string }

// Job comes first: which job is followed, in which workspace.
type Job struct {
	Job       string `json:"job"`
	Workspace string `json:"workspace"`
	Host      string `json:"host,omitempty"`
}

// Text is a piece of the model's text as it is written. Turn names the
// model call (the conversation's length when it was asked, the same for a
// retry), not the journal's turn count. Begin opens an
// answer (what follows until End is one answer of Turn); Restart says an
// earlier attempt's text of this turn was shown and what follows replaces
// it; Dropped counts bytes this follower missed (it fell behind); End
// closes the answer (Failed: its attempt failed, a retry may restart it).
type Text struct {
	Turn    int    `json:"turn"`
	Attempt int    `json:"attempt"`
	Text    string `json:"text"`
	Begin   bool   `json:"begin,omitempty"`
	Restart bool   `json:"restart,omitempty"`
	Dropped int    `json:"dropped,omitempty"`
	End     bool   `json:"end,omitempty"`
	Failed  bool   `json:"failed,omitempty"`
}

// Thought is a piece of the model's reasoning as it is written (an
// endpoint's streamed reasoning_content: DeepSeek, vLLM, llama.cpp,
// OpenRouter), before the text of the same Turn and Attempt. It is not
// the answer: a follower that puts Text events together leaves it out.
// Dropped counts bytes this follower missed.
type Thought struct {
	Turn    int    `json:"turn"`
	Attempt int    `json:"attempt"`
	Text    string `json:"text"`
	Dropped int    `json:"dropped,omitempty"`
}

// Model is a model turn as the journal records it: its text (with the
// calls it makes, "… (calls Read, Bash)"). Streamed: the text was already
// given as Text events; Shown is that streamed part (not in JSON).
type Model struct {
	Seq      int    `json:"seq"`
	Turn     int    `json:"turn"`
	Text     string `json:"text"`
	Calls    bool   `json:"calls"`
	Streamed bool   `json:"streamed"`
	Shown    string `json:"-"`
}

// ToolCall is a call the model makes. Input is its arguments when they
// are small (jobapi.MaxEventInput); InputBytes their size.
type ToolCall struct {
	Seq        int             `json:"seq"`
	Turn       int             `json:"turn"`
	Call       string          `json:"call"`
	Tool       string          `json:"tool"`
	Summary    string          `json:"summary"`
	Input      json.RawMessage `json:"input,omitempty"`
	InputBytes int             `json:"inputBytes"`
}

// Decision is the pipeline's verdict on a call: the decision, the layer
// that made it and, for a person's answer (or "timeout"), who.
type Decision struct {
	Seq      int               `json:"seq"`
	Turn     int               `json:"turn"`
	Call     string            `json:"call"`
	Tool     string            `json:"tool"`
	Decision approval.Decision `json:"decision"`
	Layer    approval.Layer    `json:"layer"`
	By       string            `json:"by,omitempty"`
	Text     string            `json:"text"`
}

// Waiting is a call that waits for a person.
type Waiting struct {
	Seq     int    `json:"seq"`
	Turn    int    `json:"turn"`
	Call    string `json:"call"`
	Tool    string `json:"tool"`
	Summary string `json:"summary"`
}

// ToolResult is a call's result: OK false when it ran and failed or could
// not run; Summary is the first line of its output. Output is an excerpt
// of the output (whole up to 4 KiB, else its first and last 2 KiB with a
// line saying what was cut), OutputBytes its size; Diff a Write's or
// Edit's change. The journal keeps those for its last 64 results only.
type ToolResult struct {
	Seq         int    `json:"seq"`
	Turn        int    `json:"turn"`
	Call        string `json:"call"`
	Tool        string `json:"tool"`
	OK          bool   `json:"ok"`
	Summary     string `json:"summary"`
	Output      string `json:"output,omitempty"`
	OutputBytes int    `json:"outputBytes,omitempty"`
	Diff        *Diff  `json:"diff,omitempty"`
}

// Diff is a file's change as an editor shows it: its path (as the call
// named it), the text before and after — for an Edit the replaced region,
// for a Write the whole file. OldText is absent for a new file, and when
// the old content is not known (OldKnown false: the file was larger than
// the journal keeps). Each side is at most 8 KiB; Cut says what was left
// out.
type Diff struct {
	Path     string  `json:"path"`
	OldText  *string `json:"oldText,omitempty"`
	NewText  string  `json:"newText"`
	OldKnown bool    `json:"oldKnown"`
	Cut      string  `json:"cut,omitempty"`
}

// Answer is the job's answer to a message (or to its task). Streamed: it
// was given as Text events as it was written.
type Answer struct {
	Seq      int    `json:"seq"`
	Turn     int    `json:"turn"`
	Text     string `json:"text"`
	Streamed bool   `json:"streamed"`
}

// Park is the job waiting for something other than a call's answer: its
// budget ("budget"), the model endpoint ("model-wait"), disk space
// ("disk-full"). Text says what to do.
type Park struct {
	Seq    int    `json:"seq"`
	Turn   int    `json:"turn"`
	Reason string `json:"reason"`
	Text   string `json:"text"`
}

// Error is something that went wrong and did not end the job.
type Error struct {
	Seq  int    `json:"seq"`
	Turn int    `json:"turn"`
	Call string `json:"call,omitempty"`
	Tool string `json:"tool,omitempty"`
	Text string `json:"text"`
}

// Note is any other step of the journal (mode, message, rule, grant,
// sandbox, compact, interrupt, ended, a person's vote …), by its kind.
type Note struct {
	Seq  int    `json:"seq"`
	Turn int    `json:"turn"`
	Kind string `json:"kind"`
	Call string `json:"call,omitempty"`
	Tool string `json:"tool,omitempty"`
	Text string `json:"text"`
}

// Result comes last: how the job (or, for a conversation, this message)
// ended. Status is one of the Status* constants.
type Result struct {
	Job    string       `json:"job"`
	Status string       `json:"status"`
	Answer string       `json:"answer"`
	Turns  int          `json:"turns"`
	Usage  jobapi.Usage `json:"usage"`
	Error  string       `json:"error,omitempty"`
}

// A Result's Status.
const (
	// StatusAnswered: the job answered and waits for the next message.
	StatusAnswered = "answered"
	// StatusDone: the job answered and ended (--once).
	StatusDone = "done"
	// StatusEnded: the job was ended (starter end) or its idle limit passed.
	StatusEnded = "ended"
	// StatusMaxTurns: the turn limit stopped the model before it finished.
	StatusMaxTurns = "max_turns"
	// StatusBudget: the job ended while its token budget was reached.
	StatusBudget = "budget"
	// StatusFailed: the workflow failed, was canceled, terminated or
	// timed out.
	StatusFailed = "failed"
)

func (Job) Type() string        { return "job" }
func (Text) Type() string       { return "text" }
func (Thought) Type() string    { return "thought" }
func (Model) Type() string      { return "model" }
func (ToolCall) Type() string   { return "tool_call" }
func (Decision) Type() string   { return "decision" }
func (Waiting) Type() string    { return "waiting" }
func (ToolResult) Type() string { return "tool_result" }
func (Answer) Type() string     { return "answer" }
func (Park) Type() string       { return "park" }
func (Error) Type() string      { return "error" }
func (Note) Type() string       { return "note" }
func (Result) Type() string     { return "result" }

// Types are an example of every event type, in the order they are
// documented; the schema test checks the schema names each.
var Types = []Event{Job{}, Text{}, Thought{}, Model{}, ToolCall{}, Decision{}, Waiting{}, ToolResult{}, Answer{}, Park{}, Error{}, Note{}, Result{}}

// Marshal is e as one JSON object with its "type" first, no line feed.
func Marshal(e Event) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", e.Type(), err)
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("encode %s event: not an object", e.Type())
	}
	var out bytes.Buffer
	out.Grow(len(b) + 20)
	fmt.Fprintf(&out, `{"type":%q`, e.Type())
	if len(b) > 2 {
		out.WriteByte(',')
	}
	out.Write(b[1:])
	return out.Bytes(), nil
}

// Unmarshal reads one event Marshal wrote.
func Unmarshal(b []byte) (Event, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("decode event: %w", err)
	}
	for _, t := range Types {
		if t.Type() == head.Type {
			return decodeAs(t, b)
		}
	}
	return nil, fmt.Errorf("decode event: unknown type %q", head.Type)
}
