package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/hooks"
)

// The audit keeps what `policy replay` needs to judge a call again: each
// decision the job's mode and what the deciding hook said, the job's first
// record the policy's facts.
func TestAuditKeepsReplayFacts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		answer string // a person's answer, "" for none
		layer  approval.Layer
		said   hooks.Decision
	}{
		{name: "a hook that asks, a person who allows", script: `cat >/dev/null; echo '{"decision":"ask","reason":"check the file"}'`,
			answer: "allow", layer: approval.LayerHuman, said: hooks.Ask},
		{name: "a hook that denies", script: `cat >/dev/null; echo "not here" >&2; exit 2`, layer: approval.LayerHook, said: hooks.Deny},
		{name: "a hook that says nothing", script: `cat >/dev/null`, answer: "deny", layer: approval.LayerHuman},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, demomodel.Script(
				demomodel.Calls(call("w", "Write", map[string]any{"file_path": "a.txt", "content": "x"})),
				demomodel.Say("done"),
			), withSettings(settingsWithHook("Write", "guard.sh")))
			hookScript(h, "guard.sh", tc.script)
			if tc.answer != "" {
				h.signalAt(time.Second, "w", tc.answer)
			}
			_, err := h.run()
			require.NoError(t, err)
			d := h.decisions()["w"]
			assert.Equal(t, tc.layer, d.Layer)
			assert.Equal(t, approval.ModeDefault, d.Mode)
			assert.Equal(t, tc.said, d.HookDecision)
			if tc.said != "" {
				assert.Contains(t, d.Hook, "guard.sh")
			}
			recs := h.audit()
			require.NotEmpty(t, recs)
			assert.Equal(t, "sandbox", recs[0].Event)
			require.NotNil(t, recs[0].Env, "the first record holds the policy's facts")
			assert.Equal(t, h.ws, recs[0].Env.Workspace)
		})
	}
}
