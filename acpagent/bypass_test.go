package acpagent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	acp "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/settingsfile"
)

// With the user's settings disabling bypass, a new session is not offered
// bypass and session/set_mode to it is refused (also before the job
// answers, where no Update could refuse it); without the setting both work.
func TestDisableBypassACP(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		cfg, ws := t.TempDir(), t.TempDir()
		if disabled {
			require.NoError(t, os.MkdirAll(filepath.Dir(settingsfile.UserFile(cfg)), 0o755))
			require.NoError(t, os.WriteFile(settingsfile.UserFile(cfg), []byte(`{"permissions": {"disableBypassPermissionsMode": "disable"}}`), 0o644))
		}
		// What NewSession offers, and a session whose job is still to
		// start (its start needs a server: e2e's ACP tests).
		a := &agent{o: Options{UserConfigDir: cfg}, sessions: map[string]*session{}}
		mode, noBypass := a.defaultMode(ws)
		modes := modeState(mode, noBypass)
		s := newSession(a, "job-1", ws)
		s.mode, s.noBypass = mode, noBypass
		a.sessions[s.id] = s
		var ids []acp.SessionModeId
		for _, m := range modes.AvailableModes {
			ids = append(ids, m.Id)
		}
		assert.Equal(t, !disabled, contains(ids, "bypass"), "bypass offered: %v", ids)
		assert.True(t, contains(ids, "acceptEdits"))
		_, err := a.SetSessionMode(context.Background(), acp.SetSessionModeRequest{SessionId: "job-1", ModeId: "bypassPermissions"})
		if disabled {
			require.Error(t, err)
			assert.Contains(t, err.Error(), "disableBypassPermissionsMode")
			assert.Equal(t, approval.ModeDefault, s.mode)
		} else {
			require.NoError(t, err)
			assert.Equal(t, approval.ModeBypass, s.mode)
		}
	}
}

func contains(ids []acp.SessionModeId, id acp.SessionModeId) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
