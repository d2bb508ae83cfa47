package jobevents

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// writeTranscript writes msgs as a transcript file does (one message a
// line, its seq first) and returns its path.
func writeTranscript(t *testing.T, msgs []openai.ChatCompletionMessage, tail string) string {
	var b strings.Builder
	for i, m := range msgs {
		line, err := json.Marshal(m)
		require.NoError(t, err)
		fmt.Fprintf(&b, `{"seq":%d,%s`+"\n", i+1, line[1:])
	}
	b.WriteString(tail)
	path := filepath.Join(t.TempDir(), "job.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	return path
}

func call(id, tool, args string) openai.ToolCall {
	return openai.ToolCall{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: tool, Arguments: args}}
}

// A job of four turns that continued as new while its third turn's calls
// waited: the transcript holds all of it and the next message; the
// current run's journal holds the third turn's calls, the fourth turn and
// two messages, one the transcript holds and one it does not yet.
func TestHistoryMergesTheTranscriptAndTheJournal(t *testing.T) {
	const denial = `{"approved":false,"decision":"deny","layer":"rules","reason":"rm is denied","required":"x","risk":"high"}`
	msgs := []openai.ChatCompletionMessage{
		{Role: "system", Content: "you are custos"},
		{Role: "user", Content: "task"},
		{Role: "assistant", ReasoningContent: "think one", Content: "Looking.", ToolCalls: []openai.ToolCall{call("c1", "Read", `{"file_path":"a.go"}`)}},
		{Role: "tool", ToolCallID: "c1", Name: "Read", Content: "package a\n" + strings.Repeat("x", 5000)},
		{Role: "assistant", Content: "Answer one"},
		{Role: "user", Content: "second"},
		{Role: "assistant", ToolCalls: []openai.ToolCall{call("c2", "Write", `{"file_path":"b.txt","content":"new"}`), call("c3", "Bash", `{"command":"rm -rf /"}`)}},
		{Role: "tool", ToolCallID: "c2", Name: "Write", Content: "Updated b.txt"},
		{Role: "tool", ToolCallID: "c3", Name: "Bash", Content: denial},
		{Role: "assistant", ReasoningContent: "think four", Content: "Answer two"},
		{Role: "user", Content: "third"},
	}
	read, err := ReadTranscript(writeTranscript(t, msgs, `{"seq":12,"role":"us`))
	require.NoError(t, err)
	require.Len(t, read, len(msgs), "the torn last line is left out")
	old := "old"
	journal := []jobapi.Event{
		{Seq: 50, Kind: "call", Turn: 3, CallID: "c2", Tool: "Write", Text: "Write b.txt"},
		{Seq: 51, Kind: "decision", Turn: 3, CallID: "c2", Tool: "Write", Decision: approval.Allow, Layer: approval.LayerHuman, By: "ann"},
		{Seq: 52, Kind: "result", Turn: 3, CallID: "c2", Tool: "Write", Text: "Updated b.txt", Output: "Updated b.txt", OutputBytes: 13,
			Diff: &api.FileDiff{Path: "b.txt", OldText: &old, NewText: "new", OldKnown: true}},
		{Seq: 53, Kind: "call", Turn: 3, CallID: "c3", Tool: "Bash", Text: "Bash: rm -rf /"},
		{Seq: 54, Kind: "decision", Turn: 3, CallID: "c3", Tool: "Bash", Decision: approval.Deny, Layer: approval.LayerRules, Text: "deny by rules: rm is denied"},
		{Seq: 55, Kind: "error", Turn: 3, Text: "a hook failed"},
		{Seq: 56, Kind: "model", Turn: 4, Text: "Answer two"},
		{Seq: 57, Kind: "answer", Turn: 4, Text: "Answer two"},
		{Seq: 58, Kind: "message", Turn: 4, Text: "alice via cli: third"},
		{Seq: 59, Kind: "message", Turn: 4, Text: "bob via slack: fourth"},
		{Seq: 60, Kind: "mode", Turn: 4, Text: "mode default -> plan by alice via cli"},
	}
	turns := []jobapi.TurnSeq{{Turn: 1, Seq: 3}, {Turn: 2, Seq: 5}, {Turn: 3, Seq: 7}, {Turn: 4, Seq: 10}}
	var got []string
	for _, e := range History(read, turns, journal) {
		got = append(got, brief(e))
	}
	assert.Equal(t, []string{
		"note message transcript: task",
		"thought 1 think one",
		"model 1 Looking. (calls Read)",
		"call c1 Read a.go input",
		"result c1 ok package a 4175/5010 diff:false",
		"answer 2 Answer one",
		"note message transcript: second",
		"model 3 calls Write, Bash",
		"call c2 Write b.txt input",
		"call c3 Bash: rm -rf / input",
		"result c2 ok Updated b.txt 13/13 diff:true",         // the journal's: its old text
		"decision c3 deny rules deny by rules: rm is denied", // the journal's
		"thought 4 think four",
		"answer 4 Answer two",
		"note message transcript: third",
		"note message bob via slack: fourth", // not in the transcript yet
		"note mode mode default -> plan by alice via cli",
	}, got)
}

// With no journal (a job whose run just began) the transcript is all (a
// compaction's summary is not a person's message); with an empty
// transcript the journal is.
func TestHistoryOfOneSource(t *testing.T) {
	msgs := []openai.ChatCompletionMessage{{Role: "system"}, {Role: "user", Content: "task"}, {Role: "assistant", Content: "done"},
		{Role: "user", Name: api.CompactionName, Content: "Summary of the conversation so far"}}
	var got []string
	for _, e := range History(msgs, nil, nil) {
		got = append(got, brief(e))
	}
	assert.Equal(t, []string{"note message transcript: task", "answer 0 done"}, got)
	got = nil
	for _, e := range History(nil, nil, []jobapi.Event{{Seq: 1, Kind: "model", Turn: 1, Text: "hi"}, {Seq: 2, Kind: "answer", Turn: 1, Text: "hi"}}) {
		got = append(got, brief(e))
	}
	assert.Equal(t, []string{"model 1 hi", "answer 1 hi"}, got)
}

// brief is one line of what an event says.
func brief(e Event) string {
	switch e := e.(type) {
	case Note:
		return fmt.Sprintf("note %s %s", e.Kind, e.Text)
	case Thought:
		return fmt.Sprintf("thought %d %s", e.Turn, e.Text)
	case Model:
		return fmt.Sprintf("model %d %s", e.Turn, e.Text)
	case ToolCall:
		in := ""
		if e.Input != nil {
			in = " input"
		}
		return fmt.Sprintf("call %s %s%s", e.Call, e.Summary, in)
	case ToolResult:
		ok := "failed"
		if e.OK {
			ok = "ok"
		}
		return fmt.Sprintf("result %s %s %s %d/%d diff:%v", e.Call, ok, e.Summary, len(e.Output), e.OutputBytes, e.Diff != nil)
	case Decision:
		return fmt.Sprintf("decision %s %s %s %s", e.Call, e.Decision, e.Layer, e.Text)
	case Answer:
		return fmt.Sprintf("answer %d %s", e.Turn, e.Text)
	case Error:
		return "error " + e.Text
	}
	return e.Type()
}
