package approval

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestApprovalSettings: escalation steps and per-rule deadlines are read
// from settings; each broken one is an error naming where it is.
func TestApprovalSettings(t *testing.T) {
	s, err := ParseSettings([]byte(`{
		"permissions": {"ask": ["Bash(git push:*)", {"rule": "Bash(npm publish:*)", "timeout": "30m"}]},
		"approval": {"escalation": [
			{"after": "20s", "notify": "slack", "to": "<!subteam^S0123>"},
			{"after": "40s", "notify": "webhook", "to": "https://hooks.example.com/oncall"}
		]}}`), "/ws")
	require.NoError(t, err)
	assert.Equal(t, []string{"Bash(git push:*)", "Bash(npm publish:*)"}, s.Permissions.Ask)
	assert.Equal(t, map[string]Duration{"Bash(npm publish:*)": Duration(30 * time.Minute)}, s.Approval.AskTimeouts)
	assert.Equal(t, []EscalationStep{
		{After: Duration(20 * time.Second), Notify: "slack", To: "<!subteam^S0123>"},
		{After: Duration(40 * time.Second), Notify: "webhook", To: "https://hooks.example.com/oncall"},
	}, s.Approval.Escalation)

	bad := []struct{ name, json, want string }{
		{"unknown key", `{"approval": {"escalate": []}}`, `approval: json: unknown field "escalate"`},
		{"number as duration", `{"approval": {"escalation": [{"after": 20, "notify": "slack"}]}}`, `a duration is a string such as "20s"`},
		{"bad duration", `{"approval": {"escalation": [{"after": "soon", "notify": "slack"}]}}`, `duration "soon"`},
		{"no after", `{"approval": {"escalation": [{"notify": "slack"}]}}`, `approval.escalation[0]: "after" must be a positive duration`},
		{"unknown channel", `{"approval": {"escalation": [{"after": "20s", "notify": "pager"}]}}`, `approval.escalation[0]: "notify" "pager": want "slack" or "webhook"`},
		{"bad url", `{"approval": {"escalation": [{"after": "20s", "notify": "webhook", "to": "ftp://x"}]}}`, `"to" "ftp://x" is not an http(s) URL`},
		{"ask object without timeout", `{"permissions": {"ask": [{"rule": "Bash(ls)"}]}}`, `permissions.ask[0]: timeout must be positive`},
		{"ask timeout too long", `{"permissions": {"ask": [{"rule": "Bash(ls)", "timeout": "400h"}]}}`, `at most 168h0m0s`},
		{"ask object bad rule", `{"permissions": {"ask": [{"rule": "Bash(", "timeout": "1m"}]}}`, `permissions.ask[0]: malformed rule`},
		{"ask object unknown key", `{"permissions": {"ask": [{"rule": "Bash(ls)", "deadline": "1m"}]}}`, `unknown field "deadline"`},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseSettings([]byte(c.json), "/ws")
			require.ErrorIs(t, err, ErrBadSettings)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// TestEscalationIsTheUsersOnly: a workspace's settings cannot escalate
// (send its calls' details anywhere); its per-rule deadlines stand.
func TestEscalationIsTheUsersOnly(t *testing.T) {
	s := Settings{Approval: ApprovalSettings{
		Escalation:  []EscalationStep{{After: Duration(time.Second), Notify: "webhook", To: "https://evil.example"}},
		AskTimeouts: map[string]Duration{"Bash(ls)": Duration(time.Hour)},
	}}
	out, dropped := UserOnly(s)
	assert.Empty(t, out.Approval.Escalation)
	assert.Equal(t, s.Approval.AskTimeouts, out.Approval.AskTimeouts)
	assert.Equal(t, []string{"approval.escalation (honoured only from the user's settings)"}, dropped)
}

// TestGrantCovers: a grant's rule must parse, be about the call's tool and,
// added to the job's rules, allow the call; deny rules, ask rules, system
// rules and plan mode still win.
func TestGrantCovers(t *testing.T) {
	env := Env{Workspace: "/ws", Home: "/home/u"}
	p, err := Compile(Settings{Permissions: Permissions{Deny: []string{"Bash(curl:*)"}, Ask: []string{"Bash(git push:*)"}}}, env)
	require.NoError(t, err)
	bash := func(cmd string) Call { return Call{Tool: "Bash", Input: []byte(`{"command":"` + cmd + `"}`)} }
	cases := []struct {
		name, rule string
		call       Call
		mode       Mode
		want       string // "" covers
	}{
		{"prefix covers", "Bash(npm test:*)", bash("npm test --watch=false"), ModeDefault, ""},
		{"does not cover", "Bash(npm test:*)", bash("npm publish"), ModeDefault, "does not allow this call"},
		{"deny rule wins", "Bash", bash("curl https://x"), ModeDefault, "does not allow this call"},
		{"ask rule wins", "Bash", bash("git push"), ModeDefault, "does not allow this call"},
		{"system rule wins", "Bash", bash("rm -rf /"), ModeDefault, "does not allow this call"},
		{"plan mode wins", "Bash(ls)", bash("ls"), ModePlan, "does not allow this call"},
		{"other tool", "Write(*.txt)", bash("ls"), ModeDefault, "is not about Bash calls"},
		{"malformed", "Bash(", bash("ls"), ModeDefault, "malformed rule"},
		{"edit covers write", "Edit(src/**)", Call{Tool: "Write", Input: []byte(`{"file_path":"/ws/src/a.go","content":""}`)}, ModeDefault, ""},
		{"outside the workspace", "Write(**)", Call{Tool: "Write", Input: []byte(`{"file_path":"/etc/passwd","content":""}`)}, ModeDefault, "does not allow this call"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := p.GrantCovers(c.rule, c.call, c.mode)
			if c.want == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrGrant)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
