package activities

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/settingsfile"
)

// TestBashPassesToolchainSettings: sandbox.toolchains reaches the sandbox
// request, unset as unset and an empty list as "none".
func TestBashPassesToolchainSettings(t *testing.T) {
	none := []string{}
	goOnly := []string{"go"}
	for _, c := range []struct {
		name    string
		tc      *[]string
		wantSet bool
		want    []string
	}{{"unset", nil, false, nil}, {"none", &none, true, []string{}}, {"go", &goOnly, true, []string{"go"}}} {
		t.Run(c.name, func(t *testing.T) {
			req := bashCommand{command: "true"}.sandboxRequest(api.ToolRequest{Workspace: "/w", Sandbox: approval.SandboxSettings{Toolchains: c.tc}}, nil, 100)
			assert.Equal(t, c.wantSet, req.ToolchainsSet)
			assert.Equal(t, c.want, req.Toolchains)
		})
	}
}

// TestLoadSettingsSaysWhatTheWorkspaceGets: the job's first event (from
// LoadSettings' sandbox status) lists the toolchains found, the workspace
// caches and the git identity, narrowed by sandbox.toolchains.
func TestLoadSettingsSaysWhatTheWorkspaceGets(t *testing.T) {
	sb := realSandbox(t)
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module m\n\ngo 1.22\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "package.json"), []byte("{}"), 0o644))
	cfg := t.TempDir()

	s := &Settings{UserConfigDir: cfg, Sandbox: sb}
	res, err := s.LoadSettings(t.Context(), api.LoadSettingsRequest{Workspace: ws})
	require.NoError(t, err)
	gives := strings.Join(res.Env.Sandbox.Gives, "\n")
	assert.Contains(t, gives, "toolchains: go (go.mod), node (package.json)")
	assert.Contains(t, gives, "workspace caches: ")
	assert.Contains(t, gives, "git identity: ")

	p := settingsfile.UserFile(cfg)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(`{"sandbox":{"toolchains":["node"]}}`), 0o644))
	res, err = s.LoadSettings(t.Context(), api.LoadSettingsRequest{Workspace: ws})
	require.NoError(t, err)
	assert.Contains(t, res.Env.Sandbox.Gives, "toolchains: node (package.json)")
}
