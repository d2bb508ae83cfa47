package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
)

func TestIsReadOnlyAndKnownTool(t *testing.T) {
	tests := []struct {
		tool            string
		known, readOnly bool
	}{
		{"Read", true, true}, {"Glob", true, true}, {"Grep", true, true},
		{"Write", true, false}, {"Edit", true, false}, {"Bash", true, false},
		{"read", false, false}, {"WebFetch", false, false}, {"", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			require.Equal(t, tc.known, KnownTool(tc.tool))
			require.Equal(t, tc.readOnly, approval.IsReadOnly(tc.tool), "the approval pipeline's read-only set")
		})
	}
}

func TestSummarize(t *testing.T) {
	long := strings.Repeat("a", 300)
	tests := []struct {
		tool, input, want string
	}{
		{"Read", `{"file_path":"README.md"}`, "Read README.md"},
		{"LSP", `{"operation":"references","file_path":"a.go","line":3,"column":7}`, "LSP references a.go:3:7"},
		{"LSP", `{"operation":"symbols","file_path":"a.go"}`, "LSP symbols a.go"},
		{"Read", `{"file_path":"a.go","offset":120,"limit":40}`, "Read a.go from line 120"},
		{"Glob", `{"pattern":"**/*.go","path":"cmd"}`, "Glob **/*.go in cmd"},
		{"Grep", `{"pattern":"func main","glob":"*.go"}`, `Grep "func main" (*.go)`},
		{"Write", `{"file_path":"x/y.txt","content":"..."}`, "Write x/y.txt"},
		{"Edit", `{"file_path":"src/a.go","old_string":"a","new_string":"b"}`, "Edit src/a.go"},
		{"Edit", `{"file_path":"a.go","old_string":"a","new_string":"b","replace_all":true}`, "Edit a.go (replace all)"},
		{"Bash", `{"command":"go test ./..."}`, "Bash: go test ./..."},
		{"Bash", `{"command":"cd x &&\n  make\tall"}`, "Bash: cd x &&⟨LF⟩  make⟨TAB⟩all"},
		{"Bash", `{"command":"echo hi\u001b[2K\rrm -rf ."}`, "Bash: echo hi⟨ESC⟩[2K⟨CR⟩rm -rf ."},
		{"Bash", `{"command":"echo \u202eabc\u200d"}`, "Bash: echo ⟨U+202E⟩abc⟨U+200D⟩"},
		{"Write", `{"file_path":"a\u001b]8;;http://x\u0007b","content":""}`, "Write a⟨ESC⟩]8;;http://x⟨BEL⟩b"},
		{"Bash", `not json`, "Bash (invalid arguments)"},
		{"Mystery", `{"b":1,"a":2}`, `Mystery {"a":2,"b":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			require.Equal(t, tc.want, Summarize(tc.tool, json.RawMessage(tc.input)))
		})
	}
	s := Summarize("Bash", json.RawMessage(`{"command":"echo `+long+`"}`))
	// Head and tail: the end of a long command never disappears.
	require.Equal(t, "Bash: echo "+strings.Repeat("a", 55)+"⟨… 211 characters left out …⟩"+strings.Repeat("a", 34), s)
	s = Summarize("Bash", json.RawMessage(`{"command":"echo `+long+`; rm -rf ~"}`))
	require.True(t, strings.HasSuffix(s, "; rm -rf ~"), s)
}

// The workflow sizes a Bash activity's deadline by the rule the tool
// applies: a timeout the tool would refuse gets the default, since the tool
// answers it at once.
func TestBashTimeout(t *testing.T) {
	for _, tc := range []struct {
		input string
		want  time.Duration
	}{
		{`{"command":"ls"}`, 2 * time.Minute},
		{`{"command":"ls","timeout":5000}`, 5 * time.Second},
		{`{"command":"ls","timeout":600000}`, 10 * time.Minute},
		{`{"command":"ls","timeout":600001}`, 2 * time.Minute}, // refused by the tool
		{`{"command":"ls","timeout":0}`, 2 * time.Minute},      // refused by the tool
		{`{"command":"ls","timeout":1.5}`, 2 * time.Minute},    // not milliseconds: refused
		{`not json`, 2 * time.Minute},
	} {
		if got := BashTimeout(json.RawMessage(tc.input)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.input, got, tc.want)
		}
	}
}
