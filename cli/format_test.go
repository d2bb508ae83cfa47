package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/workflows/jobapi"
)

func TestFormatEvent(t *testing.T) {
	cases := []struct {
		ev   jobapi.Event
		want string
	}{
		{jobapi.Event{Kind: "model", Turn: 1, Text: "calls Write"}, "[turn 1] model: calls Write"},
		{jobapi.Event{Kind: "model", Turn: 2, Text: "Let me look. (calls Glob, Read)"}, "[turn 2] model: Let me look. (calls Glob, Read)"},
		{jobapi.Event{Kind: "model", Turn: 3, Text: "All done.\n\nDetails follow."}, "[turn 3] model: final answer"},
		{jobapi.Event{Kind: "model", Turn: 3, Text: "It calls foo"}, "[turn 3] model: final answer"},
		{jobapi.Event{Kind: "call", CallID: "c1", Text: "Bash: ls"}, "  → c1 Bash: ls"},
		{jobapi.Event{Kind: "ask", CallID: "c1", Text: "Bash: ls"}, "    c1: waiting for approval: Bash: ls"},
		{jobapi.Event{Kind: "result", CallID: "c1", Text: "     1\t# Demo …"}, "    c1 ← 1\t# Demo …"},
		{jobapi.Event{Kind: "answer", Text: "All done."}, ""},
		{jobapi.Event{Kind: "rule", Text: "learned allow rule Bash(ls)"}, "  [rule] learned allow rule Bash(ls)"},
		// What the model or a tool wrote is seen, never run by the terminal.
		{jobapi.Event{Kind: "result", CallID: "c1", Text: "ok\x1b[2K\rgone\x1b]8;;http://x\x07link\x1b]8;;\x07 \u202eabc a\u200db\nsecond"}, "    c1 ← ok⟨ESC⟩[2K⟨CR⟩gone⟨ESC⟩]8;;http://x⟨BEL⟩link⟨ESC⟩]8;;⟨BEL⟩ ⟨U+202E⟩abc a⟨U+200D⟩b"},
		{jobapi.Event{Kind: "call", CallID: "c\x1b[31m1", Text: "Bash: echo \x1b[2K\r"}, "  → c⟨ESC⟩[31m1 Bash: echo ⟨ESC⟩[2K⟨CR⟩"},
		{jobapi.Event{Kind: "decision", CallID: "c1", Text: "deny by rules: a\nb"}, "    c1: deny by rules: a⟨LF⟩b"},
		{jobapi.Event{Kind: "sandbox", Text: "sandbox: bwrap\n  caches: \x1b[1m"}, "  [sandbox] sandbox: bwrap\n  caches: ⟨ESC⟩[1m"},
		{jobapi.Event{Kind: "call", CallID: "c1", Text: "Bash: echo ⟨ESC⟩ shown by the worker"}, "  → c1 Bash: echo ⟨ESC⟩ shown by the worker"},
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
		{"escaped, whole", `{"command":"echo hi\u001b[2K\rrm -rf . \u202e\u200d"}`, "    command: echo hi⟨ESC⟩[2K⟨CR⟩rm -rf . ⟨U+202E⟩⟨U+200D⟩"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, viewInput(json.RawMessage(tc.in)))
		})
	}
}

// Without a sandbox, the starter says before the job starts that Bash will
// be refused, and the one command that gets it.
func TestNoSandboxLine(t *testing.T) {
	for _, tc := range []struct{ why, want string }{
		{sandbox.WhyNoBwrap, "get it with: make run (installs bubblewrap as root), or sudo apt-get install bubblewrap"},
		{"probe `bwrap ... true` failed: permission denied", "then check with: go run ./starter sandbox check"},
	} {
		line := noSandboxLine(tc.why)
		assert.Contains(t, line, "so this job's Bash calls will be refused")
		assert.Contains(t, line, tc.why)
		assert.True(t, strings.HasSuffix(line, tc.want), line)
		assert.NotContains(t, line, "\n", "one line")
	}
}
