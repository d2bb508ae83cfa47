package hooks

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePoint(t *testing.T) {
	tests := []struct {
		in      string
		want    Point
		wantErr bool
	}{
		{"tool.approval.pre", ToolApprovalPre, false},
		{"session.save.after", SessionSaveAfter, false},
		{"PreToolUse", ToolApprovalPre, false},
		{"PostToolUse", ToolExecuteAfter, false},
		{"PostToolUseFailure", ToolExecuteError, false},
		{"PermissionDenied", ToolExecuteDenied, false},
		{"Stop", "", true},
		{"pretooluse", "", true},
		{"", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePoint(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "unknown hook point")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	assert.Equal(t, "PreToolUse", ToolApprovalPre.ClaudeName())
	assert.Equal(t, "llm.request.before", LLMRequestBefore.ClaudeName())
}

func mustConfig(t *testing.T, s string) Config {
	t.Helper()
	var c Config
	require.NoError(t, json.Unmarshal([]byte(s), &c))
	return c
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		json string
		want []string // substrings of the error; empty means valid
	}{
		{"empty", `{}`, nil},
		{"claude shaped", `{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"./guard.sh","timeout":5}]}]}`, nil},
		{"custos names, regexp matcher", `{"tool.approval.pre":[{"matcher":"Edit|Write","hooks":[{"type":"command","command":"true","priority":3}]}],
		  "session.save.after":[{"hooks":[{"type":"command","command":"echo saved"}]}]}`, nil},
		{"unknown point", `{"BeforeEverything":[{"hooks":[{"type":"command","command":"true"}]}]}`,
			[]string{`hooks.BeforeEverything: unknown hook point "BeforeEverything"`}},
		{"bad matcher", `{"PreToolUse":[{"matcher":"Bash(","hooks":[{"type":"command","command":"true"}]}]}`,
			[]string{"hooks.PreToolUse[0].matcher: bad matcher"}},
		{"empty command", `{"PreToolUse":[{"hooks":[{"type":"command","command":"  "}]}]}`,
			[]string{"hooks.PreToolUse[0].hooks[0]: empty command"}},
		{"wrong type", `{"PreToolUse":[{"hooks":[{"type":"prompt","command":"x"}]}]}`,
			[]string{`type must be "command", got "prompt"`}},
		{"missing type", `{"PreToolUse":[{"hooks":[{"command":"x"}]}]}`,
			[]string{`type must be "command", got ""`}},
		{"negative timeout and priority", `{"PreToolUse":[{"hooks":[{"type":"command","command":"x","timeout":-1,"priority":-5}]}]}`,
			[]string{"negative timeout -1", "reserved for system hooks"}},
		{"empty group", `{"PreToolUse":[{"matcher":"Bash","hooks":[]}]}`,
			[]string{"hooks.PreToolUse[0]: no hooks in matcher group"}},
		{"every problem reported at once", `{"Nope":[{"hooks":[{"type":"command","command":"x"}]}],
		  "PreToolUse":[{"matcher":"[","hooks":[{"type":"command","command":""}]}]}`,
			[]string{"hooks.Nope", "hooks.PreToolUse[0].matcher", "hooks.PreToolUse[0].hooks[0]: empty command"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mustConfig(t, tt.json).Validate()
			if len(tt.want) == 0 {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestCommandHooks(t *testing.T) {
	c := mustConfig(t, `{
	  "tool.approval.pre": [
	    {"matcher": "Bash", "hooks": [{"type":"command","command":"b-late","priority":10}, {"type":"command","command":"b-first"}]},
	    {"matcher": "Write", "hooks": [{"type":"command","command":"write-only"}]}
	  ],
	  "PreToolUse": [
	    {"matcher": "", "hooks": [{"type":"command","command":"claude-all","timeout":7}]},
	    {"matcher": "[", "hooks": [{"type":"command","command":"broken-matcher"}]},
	    {"hooks": [{"type":"command","command":""}]}
	  ],
	  "PostToolUse": [{"hooks": [{"type":"command","command":"after"}]}]
	}`)

	got := c.CommandHooks(ToolApprovalPre, "Bash")
	var cmds []string
	for _, h := range got {
		cmds = append(cmds, h.Command)
		assert.Equal(t, ToolApprovalPre, h.Point)
	}
	// Priority first; at equal priority key order (PreToolUse < tool.approval.pre),
	// then group and hook order. Invalid entries are skipped.
	assert.Equal(t, []string{"claude-all", "b-first", "b-late"}, cmds)
	assert.Equal(t, 7*time.Second, got[0].Timeout)
	assert.Equal(t, DefaultTimeout, got[1].Timeout)
	assert.Equal(t, "PreToolUse[0].hooks[0] claude-all", got[0].Name)
	assert.Equal(t, "tool.approval.pre[0].hooks[1] b-first", got[1].Name)

	assert.Len(t, c.CommandHooks(ToolApprovalPre, "Read"), 1)
	assert.Len(t, c.CommandHooks(ToolExecuteAfter, "Read"), 1)
	assert.Empty(t, c.CommandHooks(SessionSaveAfter, ""))
}

func TestMerge(t *testing.T) {
	user := mustConfig(t, `{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"user"}]}],
	                        "Unknown":[{"hooks":[{"type":"command","command":"u"}]}]}`)
	project := mustConfig(t, `{"tool.approval.pre":[{"hooks":[{"type":"command","command":"project"}]}]}`)
	local := mustConfig(t, `{"PreToolUse":[{"hooks":[{"type":"command","command":"local"}]}]}`)

	m := Merge(user, project, local)
	var cmds []string
	for _, h := range m.CommandHooks(ToolApprovalPre, "Bash") {
		cmds = append(cmds, h.Command)
	}
	// Aliases are normalised, so file order survives across names.
	assert.Equal(t, []string{"user", "project", "local"}, cmds)
	assert.Contains(t, m, "Unknown", "unknown keys are kept for Validate to report")
	assert.Error(t, m.Validate())

	// Inputs untouched.
	m["tool.approval.pre"][0].Hooks[0].Command = "changed"
	assert.Equal(t, "user", user["PreToolUse"][0].Hooks[0].Command)
	assert.Len(t, user["PreToolUse"], 1)
	assert.Empty(t, Merge())
}
