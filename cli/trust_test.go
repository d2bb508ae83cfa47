package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/cli"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/settingsfile"
)

// repoWorkspace is a workspace whose committed settings would widen the
// policy: allow every Bash command.
func repoWorkspace(t *testing.T) string {
	ws := testenv.Workspace(t)
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".custos"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", "settings.json"),
		[]byte(`{"permissions":{"allow":["Bash"]}}`), 0o644))
	return ws
}

func policyDecision(t *testing.T, ws, cfg string) (approval.Decision, string) {
	code, out, errOut := runApp(t, context.Background(), "policy", "check", "--tool", "Bash",
		"--input", `{"command":"make"}`, "--workspace", ws, "--config-dir", cfg)
	require.Equal(t, 0, code, errOut)
	var res struct {
		Decision approval.Decision `json:"decision"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	return res.Decision, errOut
}

func TestTrustCommand(t *testing.T) {
	ws, cfg := repoWorkspace(t), t.TempDir()
	d, errOut := policyDecision(t, ws, cfg)
	assert.Equal(t, approval.Ask, d, "an untrusted workspace's allow rule does not count")
	assert.Contains(t, errOut, "not a trusted workspace")
	assert.Contains(t, errOut, "permissions.allow (1 rule)")
	assert.Contains(t, errOut, "starter trust "+ws)

	code, out, errOut := runApp(t, context.Background(), "trust", ws, "--config-dir", cfg)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "trusted "+ws)

	d, errOut = policyDecision(t, ws, cfg)
	assert.Equal(t, approval.Allow, d)
	assert.NotContains(t, errOut, "not a trusted workspace")

	code, _, _ = runApp(t, context.Background(), "trust", ws, "elsewhere", "--config-dir", cfg)
	assert.Equal(t, 2, code)
}

// On a terminal, run asks before trusting; the answer is kept.
func TestRunOffersTrust(t *testing.T) {
	for _, tc := range []struct {
		answer string
		trust  bool
	}{{"y\n", true}, {"\n", false}} {
		t.Run(strings.TrimSpace("answer "+tc.answer), func(t *testing.T) {
			cfg := t.TempDir()
			t.Setenv("XDG_CONFIG_HOME", cfg)
			task := "trust offer " + t.Name()
			jobEnv(t, task, demomodel.Script(demomodel.Say("ok")))
			ws := repoWorkspace(t)
			var out, errb bytes.Buffer
			app := &cli.App{Stdin: strings.NewReader(tc.answer), Stdout: &out, Stderr: &errb, Interactive: true, Logger: testenv.Logger()}
			code := app.Main(context.Background(), []string{"run", "--detach", "--workspace", ws, task})
			require.Equal(t, 0, code, errb.String())
			assert.Contains(t, out.String(), "? Trust "+ws)
			l, err := settingsfile.Load(cfg, ws)
			require.NoError(t, err)
			assert.Equal(t, tc.trust, l.Trusted)
		})
	}
}
