package approval

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// disableBypassPermissionsMode is read strictly ("disable" only), kept
// from any file (an untrusted workspace's too: it narrows), OR-ed when
// files merge, and refuses bypass, alias included, and a defaultMode of
// bypass, with an error that names the setting.
func TestDisableBypassPermissionsMode(t *testing.T) {
	on, err := ParseSettings([]byte(`{"permissions": {"disableBypassPermissionsMode": "disable"}}`), "/w")
	require.NoError(t, err)
	assert.True(t, on.Permissions.DisableBypass)
	off, err := ParseSettings([]byte(`{"permissions": {"disableBypassPermissionsMode": null}}`), "/w")
	require.NoError(t, err)
	assert.False(t, off.Permissions.DisableBypass)
	for _, bad := range []string{`true`, `"Disable"`, `"enable"`, `1`} {
		_, err := ParseSettings([]byte(`{"permissions": {"disableBypassPermissionsMode": `+bad+`}}`), "/w")
		require.ErrorIs(t, err, ErrBadSettings, bad)
		assert.Contains(t, err.Error(), `permissions.disableBypassPermissionsMode: want "disable"`)
	}

	restricted, _ := Restrict(on)
	assert.True(t, restricted.Permissions.DisableBypass, "an untrusted workspace may disable bypass")
	assert.True(t, MergeSettings(off, on).Permissions.DisableBypass)
	assert.True(t, MergeSettings(on, off).Permissions.DisableBypass, "a later file cannot enable it again")

	require.ErrorIs(t, CheckMode(on, ModeBypass), ErrBypassDisabled)
	for _, m := range []Mode{"", ModeDefault, ModePlan, ModeDontAsk, ModeAcceptEdits} {
		assert.NoError(t, CheckMode(on, m), m)
	}
	assert.NoError(t, CheckMode(off, ModeBypass))

	both, err := ParseSettings([]byte(`{"permissions": {"defaultMode": "bypassPermissions", "disableBypassPermissionsMode": "disable"}}`), "/w")
	require.NoError(t, err)
	_, err = Compile(both, Env{Workspace: "/w", Home: "/home/u"})
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrBypassDisabled))
	assert.Contains(t, err.Error(), "permissions.defaultMode: bypass mode is disabled by permissions.disableBypassPermissionsMode")
	_, err = Compile(MergeSettings(Settings{Permissions: Permissions{DefaultMode: ModeBypass}}, restricted), Env{Workspace: "/w", Home: "/home/u"})
	require.ErrorIs(t, err, ErrBypassDisabled, "a workspace's setting refuses the user's defaultMode bypass")
}
