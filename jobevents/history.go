package jobevents

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// A follower that comes late (an editor's session/load) wants the whole
// conversation, not only what the current run's journal holds: a job
// continues as new when its history grows, and each run starts a journal
// of its own. What outlives every run is the job's transcript (its
// conversation, one message a line, reasoning and whole tool outputs
// included). History is the transcript as events for what it holds and
// the journal for what it does not hold yet, each step once.

// TranscriptUser is who a person's message read back from the
// transcript is by (the transcript does not say who sent it).
const TranscriptUser = "transcript"

// maxHistoryInput bounds the call arguments a transcript's call event
// keeps (the journal keeps jobapi.MaxEventInput).
const maxHistoryInput = 16 << 10

// ReadTranscript reads a job's transcript (api.JobFiles.Transcript): its
// messages from seq 1, up to the first line that does not follow (a torn
// last line is not an error).
func ReadTranscript(path string) ([]openai.ChatCompletionMessage, error) {
	if !filepath.IsAbs(path) || filepath.Ext(path) != ".jsonl" {
		return nil, fmt.Errorf("transcript %q: not an absolute path to a .jsonl file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	defer f.Close()
	var msgs []openai.ChatCompletionMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var l struct {
			Seq int `json:"seq"`
		}
		var m openai.ChatCompletionMessage
		if json.Unmarshal(sc.Bytes(), &l) != nil || json.Unmarshal(sc.Bytes(), &m) != nil || l.Seq != len(msgs)+1 {
			break
		}
		msgs = append(msgs, m)
	}
	if err := sc.Err(); err != nil && len(msgs) == 0 {
		return nil, fmt.Errorf("read transcript %s: %w", path, err)
	}
	return msgs, nil
}

// FromTranscript is a conversation's messages (msgs[0] is seq 1, the
// system prompt, which is not shown) as events: a person's message a
// message Note by TranscriptUser (a compaction's summary is left out), the model's reasoning a Thought, its text
// a Model turn (with calls) or an Answer, each call a ToolCall, each
// result a ToolResult with an excerpt of its output, or the Decision of
// a refused call. turns names the model turn of each answer's seq.
func FromTranscript(msgs []openai.ChatCompletionMessage, turns []jobapi.TurnSeq) []Event {
	turnAt := map[int]int{}
	for _, t := range turns {
		turnAt[t.Seq] = t.Turn
	}
	tools := map[string]string{}
	var out []Event
	for i := 1; i < len(msgs); i++ {
		m, turn := msgs[i], turnAt[i+1]
		switch m.Role {
		case openai.ChatMessageRoleUser:
			// A compaction's summary is the model's, not a person's.
			if m.Content != "" && m.Name != api.CompactionName {
				out = append(out, Note{Kind: "message", Text: TranscriptUser + ": " + m.Content})
			}
		case openai.ChatMessageRoleAssistant:
			out = append(out, assistantEvents(m, turn, tools)...)
		case openai.ChatMessageRoleTool:
			out = append(out, resultOf(m, tools[m.ToolCallID]))
		}
	}
	return out
}

// assistantEvents are a model answer's events; tools learns its calls.
func assistantEvents(m openai.ChatCompletionMessage, turn int, tools map[string]string) []Event {
	var out []Event
	if m.ReasoningContent != "" {
		out = append(out, Thought{Turn: turn, Text: m.ReasoningContent})
	}
	if len(m.ToolCalls) == 0 {
		return append(out, Answer{Turn: turn, Text: m.Content})
	}
	names := make([]string, len(m.ToolCalls))
	for i, tc := range m.ToolCalls {
		names[i] = tc.Function.Name
	}
	text := "calls " + strings.Join(names, ", ")
	if t := strings.TrimSpace(m.Content); t != "" {
		text = t + " (" + text + ")"
	}
	out = append(out, Model{Turn: turn, Text: text, Calls: true})
	for _, tc := range m.ToolCalls {
		tools[tc.ID] = tc.Function.Name
		in := json.RawMessage(tc.Function.Arguments)
		c := ToolCall{Turn: turn, Call: tc.ID, Tool: tc.Function.Name, Summary: api.Summarize(tc.Function.Name, in), InputBytes: len(in)}
		if len(in) <= maxHistoryInput && json.Valid(in) {
			c.Input = in
		}
		out = append(out, c)
	}
	return out
}

// resultOf is a tool message's event: a refusal (the JSON the model is
// given, "approved": false) is the call's Decision; anything else its
// result, failed when it says "Error: ".
func resultOf(m openai.ChatCompletionMessage, tool string) Event {
	var d struct {
		Approved *bool             `json:"approved"`
		Decision approval.Decision `json:"decision"`
		Layer    approval.Layer    `json:"layer"`
		Reason   string            `json:"reason"`
	}
	if strings.HasPrefix(m.Content, "{") && json.Unmarshal([]byte(m.Content), &d) == nil && d.Approved != nil && !*d.Approved {
		return Decision{Call: m.ToolCallID, Tool: tool, Decision: approval.Deny, Layer: d.Layer, Text: d.Reason}
	}
	if tool == "" {
		tool = m.Name
	}
	first, _, _ := strings.Cut(m.Content, "\n")
	first, _ = api.Bounded(first, 160)
	return ToolResult{Call: m.ToolCallID, Tool: tool, OK: !strings.HasPrefix(m.Content, "Error: "), Summary: first,
		Output: api.Excerpt(m.Content, api.ExcerptKeep), OutputBytes: len(m.Content)}
}
