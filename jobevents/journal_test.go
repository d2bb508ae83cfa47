package jobevents

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Each kind of the journal becomes its typed event; what has no type of
// its own is a note by its kind.
func TestFromJournal(t *testing.T) {
	cases := []struct {
		in   jobapi.Event
		want Event
	}{
		{jobapi.Event{Seq: 1, Turn: 1, Kind: "model", Text: "Let me look. (calls Read)"}, Model{Seq: 1, Turn: 1, Text: "Let me look. (calls Read)", Calls: true}},
		{jobapi.Event{Seq: 2, Turn: 1, Kind: "model", Text: "It calls foo"}, Model{Seq: 2, Turn: 1, Text: "It calls foo"}},
		{jobapi.Event{Seq: 3, Kind: "decision", CallID: "c", Tool: "Bash", Decision: approval.Deny, Layer: approval.LayerHuman, By: "timeout", Text: "deny"},
			Decision{Seq: 3, Call: "c", Tool: "Bash", Decision: approval.Deny, Layer: approval.LayerHuman, By: "timeout", Text: "deny"}},
		{jobapi.Event{Seq: 4, Kind: "result", CallID: "c", Tool: "Bash", Text: "Error: exit 1", Failed: true}, ToolResult{Seq: 4, Call: "c", Tool: "Bash", OK: false, Summary: "Error: exit 1"}},
		{jobapi.Event{Seq: 5, Kind: "result", CallID: "c", Tool: "Read", Text: "Error handling, line 1"}, ToolResult{Seq: 5, Call: "c", Tool: "Read", OK: true, Summary: "Error handling, line 1"}},
		{jobapi.Event{Seq: 6, Kind: "ask", CallID: "c", Tool: "Write", Text: "Write a"}, Waiting{Seq: 6, Call: "c", Tool: "Write", Summary: "Write a"}},
		{jobapi.Event{Seq: 7, Kind: "answer", Text: "done"}, Answer{Seq: 7, Text: "done"}},
		{jobapi.Event{Seq: 8, Kind: "answer", CallID: "c", Text: "approved by ann; still needed: 1"}, Note{Seq: 8, Kind: "vote", Call: "c", Text: "approved by ann; still needed: 1"}},
		{jobapi.Event{Seq: 9, Kind: "budget", Text: "reached"}, Park{Seq: 9, Reason: "budget", Text: "reached"}},
		{jobapi.Event{Seq: 10, Kind: "model-wait", Text: "401"}, Park{Seq: 10, Reason: "model-wait", Text: "401"}},
		{jobapi.Event{Seq: 11, Kind: "error", Text: "hook failed"}, Error{Seq: 11, Text: "hook failed"}},
		{jobapi.Event{Seq: 12, Kind: "mode", Text: "plan"}, Note{Seq: 12, Kind: "mode", Text: "plan"}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, FromJournal(tc.in), "%+v", tc.in)
	}
}
