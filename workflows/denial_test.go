package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
)

// TestDenialSaysWhatWouldAllowIt pins, per scenario, the exact structured
// denial the model receives: the deciding layer and rule, the reason, what
// would be required to allow the call, and its risk class.
func TestDenialSaysWhatWouldAllowIt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     approval.Mode
		settings string
		tool     string
		args     map[string]any
		deny     bool // a person denies it
		want     string
	}{
		{name: "system rule", tool: "Bash", args: map[string]any{"command": "sudo id"},
			want: `{"approved":false,"decision":"deny","layer":"rules","rule":"privilege-escalation","reason":"system rule: running anything as another user: sudo, su, doas, pkexec, run0","required":"nothing: a system rule denies this call and nothing overrides it","risk":"exec"}`},
		{name: "user deny rule", settings: `{"permissions":{"deny":["Bash(curl:*)"]}}`, tool: "Bash", args: map[string]any{"command": "curl -s https://example.com"},
			want: `{"approved":false,"decision":"deny","layer":"rules","rule":"Bash(curl:*)","reason":"denied by rule Bash(curl:*)","required":"the user removing the deny rule Bash(curl:*) from their settings","risk":"network"}`},
		{name: "plan mode", mode: approval.ModePlan, tool: "Write", args: map[string]any{"file_path": "x.txt", "content": "x"},
			want: `{"approved":false,"decision":"deny","layer":"mode","reason":"plan mode: only read-only tools may run","required":"leaving plan mode (a person can switch the job to default or acceptEdits); plan mode only reads","risk":"write"}`},
		{name: "dontAsk mode", mode: approval.ModeDontAsk, tool: "Bash", args: map[string]any{"command": "make test"},
			want: `{"approved":false,"decision":"deny","layer":"mode","reason":"mode dontAsk denies whatever would need a person","required":"an allow rule such as Bash(make test), or a mode that asks a person (the job is in dontAsk mode)","risk":"exec"}`},
		{name: "a person", tool: "Edit", args: map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b"}, deny: true,
			want: `{"approved":false,"decision":"deny","layer":"human","reason":"denied by test","required":"a person's approval (decide Update allow), or an allow rule such as Edit(a.txt)","risk":"write"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []harnessOpt
			if tc.settings != "" {
				opts = append(opts, withSettings(tc.settings))
			}
			h := newHarness(t, demomodel.Script(demomodel.Calls(call("c1", tc.tool, tc.args)), demomodel.Say("done")), opts...)
			h.input.Mode = tc.mode
			h.writeFile("a.txt", "a")
			if tc.deny {
				h.signalAt(time.Second, "c1", "deny")
			}
			_, err := h.run()
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, h.toolResults()["c1"])
		})
	}
}
