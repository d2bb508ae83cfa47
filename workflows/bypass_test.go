package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
)

// TestDisableBypassModeChange: with the user's settings disabling bypass,
// the mode Update is rejected by its validator and the mode signal is
// ignored; the job stays in default and other modes still apply.
func TestDisableBypassModeChange(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("w1", "Write", map[string]any{"file_path": "a.txt", "content": "a"})),
		demomodel.Say("done"),
	), withUserSettings(map[string]any{"permissions": map[string]any{"disableBypassPermissionsMode": "disable"}}))
	h.signalAt(4*time.Second, "w1", "allow")
	up := h.updateAt(time.Second, ModeUpdate, ModeChange{Mode: "bypassPermissions", By: "alice", Channel: "cli"})
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(ModeSignal, ModeChange{Mode: "bypass", By: "hook"})
	}, 2*time.Second)
	var mode approval.Mode
	h.env.RegisterDelayedCallback(func() { mode = h.status().Mode }, 2500*time.Millisecond)
	plan := h.updateAt(3*time.Second, ModeUpdate, ModeChange{Mode: "dontAsk", By: "alice"})
	_, err := h.run()
	require.NoError(t, err)
	require.Error(t, up.rejected)
	assert.Contains(t, up.rejected.Error(), "not applied: bypass mode is disabled by permissions.disableBypassPermissionsMode")
	assert.Equal(t, approval.ModeDefault, mode, "neither the Update nor the signal switched to bypass")
	require.NoError(t, plan.err)
	assert.Equal(t, approval.ModeDontAsk, plan.mode.New)
	for _, r := range h.audit() {
		assert.NotContains(t, r.Reason, "-> bypass", "no mode change to bypass recorded")
	}
}

// TestDisableBypassStart: a job asked to start in bypass, or whose
// settings' defaultMode is bypass, fails at its start with the reason when
// any settings file (here a workspace's) disables bypass.
func TestDisableBypassStart(t *testing.T) {
	disable := `{"permissions": {"disableBypassPermissionsMode": "disable"}}`
	t.Run("asked", func(t *testing.T) {
		h := newHarness(t, demomodel.Script(demomodel.Say("done")), withSettings(disable))
		h.input.Mode = approval.ModeBypass
		_, err := h.run()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "bypass mode is disabled by permissions.disableBypassPermissionsMode")
		assert.Empty(t, h.oai.Requests(), "no model call in bypass")
	})
	t.Run("defaultMode", func(t *testing.T) {
		h := newHarness(t, demomodel.Script(demomodel.Say("done")), withSettings(disable),
			withUserSettings(map[string]any{"permissions": map[string]any{"defaultMode": "bypassPermissions"}}))
		_, err := h.run()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "permissions.defaultMode: bypass mode is disabled")
	})
	t.Run("untrusted workspace narrows too", func(t *testing.T) {
		h := newHarness(t, demomodel.Script(demomodel.Say("done")), withSettings(disable), func(c *harnessConfig) { c.untrusted = true })
		h.input.Mode = approval.ModeBypass
		_, err := h.run()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "bypass mode is disabled")
	})
}
