package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/settingsfile"
)

// With the user's settings disabling bypass, starter run --mode bypass and
// schedule create --mode bypass are usage errors before anything is
// dialled (the server address here answers nothing), as are both without
// --mode when the settings' defaultMode is bypass.
func TestDisableBypassCLI(t *testing.T) {
	for name, settings := range map[string]string{
		"asked":       `{"permissions": {"disableBypassPermissionsMode": "disable"}}`,
		"defaultMode": `{"permissions": {"disableBypassPermissionsMode": "disable", "defaultMode": "bypassPermissions"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			cfg, ws := t.TempDir(), t.TempDir()
			t.Setenv("XDG_CONFIG_HOME", cfg)
			t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
			t.Setenv("TEMPORAL_CONFIG_FILE", filepath.Join(t.TempDir(), "none.toml"))
			require.NoError(t, os.MkdirAll(filepath.Dir(settingsfile.UserFile(cfg)), 0o755))
			require.NoError(t, os.WriteFile(settingsfile.UserFile(cfg), []byte(settings), 0o644))
			mode := []string{"--mode", "bypass"}
			if name == "defaultMode" {
				mode = nil
			}
			for _, args := range [][]string{
				append([]string{"run", "--detach", "--workspace", ws}, append(mode, "do it")...),
				append([]string{"schedule", "create", "nightly", "--every", "24h", "--workspace", ws}, append(mode, "do it")...),
			} {
				code, _, errOut := runApp(t, context.Background(), args...)
				assert.Equal(t, 2, code, "%v: %s", args, errOut)
				assert.Contains(t, errOut, "bypass mode is disabled by permissions.disableBypassPermissionsMode", args)
			}
		})
	}
}
