package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/custos-dev/custos/workflows"
)

func TestFormatEvent(t *testing.T) {
	cases := []struct {
		ev   workflows.Event
		want string
	}{
		{workflows.Event{Kind: "model", Turn: 1, Text: "calls Write"}, "[turn 1] model: calls Write"},
		{workflows.Event{Kind: "model", Turn: 2, Text: "Let me look. (calls Glob, Read)"}, "[turn 2] model: Let me look. (calls Glob, Read)"},
		{workflows.Event{Kind: "model", Turn: 3, Text: "All done.\n\nDetails follow."}, "[turn 3] model: final answer"},
		{workflows.Event{Kind: "model", Turn: 3, Text: "It calls foo"}, "[turn 3] model: final answer"},
		{workflows.Event{Kind: "call", CallID: "c1", Text: "Bash: ls"}, "  → c1 Bash: ls"},
		{workflows.Event{Kind: "ask", CallID: "c1", Text: "Bash: ls"}, "    c1: waiting for approval: Bash: ls"},
		{workflows.Event{Kind: "result", CallID: "c1", Text: "     1\t# Demo …"}, "    c1 ← 1\t# Demo …"},
		{workflows.Event{Kind: "answer", Text: "All done."}, ""},
		{workflows.Event{Kind: "rule", Text: "learned allow rule Bash(ls)"}, "  [rule] learned allow rule Bash(ls)"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, formatEvent(tc.ev), "%+v", tc.ev)
	}
}

func TestViewInput(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"one-line fields sorted", `{"file_path":"a.txt","content":"x","limit":3}`,
			"    content: x\n    file_path: a.txt\n    limit: 3"},
		{"multi-line strings as blocks, last", `{"content":"a\nb\n","file_path":"a.txt"}`,
			"    file_path: a.txt\n    content:\n      │ a\n      │ b"},
		{"not an object", `["x"]`, "    [\n      \"x\"\n    ]"},
		{"not JSON", `nope`, "    nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, viewInput(json.RawMessage(tc.in)))
		})
	}
}
