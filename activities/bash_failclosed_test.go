package activities

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/settingsfile"
)

// On a worker without bubblewrap, Bash refuses, saying why and how to fix
// it, unless the user allowed unconfined runs (allowUnsandboxed) and the
// pipeline marked the call as approved knowing it runs unconfined; a
// failIfUnavailable anywhere wins.
func TestBashWithoutSandbox(t *testing.T) {
	sb, err := sandbox.New(sandbox.Config{BwrapPath: "/nonexistent/bwrap"})
	require.NoError(t, err)
	tools := &Tools{Sandbox: sb}
	for _, tc := range []struct {
		name       string
		settings   approval.SandboxSettings
		unconfined bool
		ran        bool
		contains   string
	}{
		{"default refuses", approval.SandboxSettings{}, false, false, "install bubblewrap"},
		{"approved but not allowed by the user refuses", approval.SandboxSettings{}, true, false, "allowUnsandboxed"},
		{"allowed but not marked approved refuses", approval.SandboxSettings{AllowUnsandboxed: true}, false, false, "user namespaces"},
		{"failIfUnavailable wins", approval.SandboxSettings{AllowUnsandboxed: true, FailIfUnavailable: true}, true, false, "install bubblewrap"},
		{"allowed and approved runs unconfined", approval.SandboxSettings{AllowUnsandboxed: true}, true, true, "WITHOUT OS isolation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivity(tools.Bash)
			ws := t.TempDir()
			val, err := env.ExecuteActivity(tools.Bash, api.ToolRequest{
				Workspace:  ws,
				Input:      json.RawMessage(`{"command":"echo ran > ran.txt; echo ran"}`),
				Sandbox:    tc.settings,
				Unconfined: tc.unconfined,
			})
			require.NoError(t, err)
			var res api.ToolResult
			require.NoError(t, val.Get(&res))
			require.Equal(t, !tc.ran, res.IsError, res.Output)
			require.Contains(t, res.Output, tc.contains)
			_, statErr := os.Stat(filepath.Join(ws, "ran.txt"))
			require.Equal(t, tc.ran, statErr == nil, "the command ran only when allowed and approved")
		})
	}
}

// LoadSettings tells the workflow which backend Bash has, so the policy can
// refuse or ask deterministically.
func TestLoadSettingsReportsSandbox(t *testing.T) {
	none, err := sandbox.New(sandbox.Config{BwrapPath: "/nonexistent/bwrap"})
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		user  string
		sb    sandbox.Sandbox
		want  approval.SandboxStatus
		check func(t *testing.T, st approval.SandboxStatus)
	}{
		{name: "no sandbox, refused", sb: none, want: approval.SandboxStatus{Backend: sandbox.BackendFallback, Unconfined: true}},
		{name: "no sandbox, user allows", user: `{"sandbox": {"allowUnsandboxed": true}}`, sb: none,
			want: approval.SandboxStatus{Backend: sandbox.BackendFallback, Unconfined: true, AllowUnconfined: true}},
		{name: "no sandbox, failIfUnavailable wins", user: `{"sandbox": {"allowUnsandboxed": true, "failIfUnavailable": true}}`, sb: none,
			want: approval.SandboxStatus{Backend: sandbox.BackendFallback, Unconfined: true}},
		{name: "sandbox unknown to this worker", want: approval.SandboxStatus{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := t.TempDir()
			if tc.user != "" {
				p := settingsfile.UserFile(cfg)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(tc.user), 0o644))
			}
			s := &Settings{UserConfigDir: cfg, Sandbox: tc.sb}
			res, err := s.LoadSettings(t.Context(), api.LoadSettingsRequest{Workspace: t.TempDir()})
			require.NoError(t, err)
			got := res.Env.Sandbox
			if tc.want.Unconfined {
				require.Contains(t, got.Why, "bwrap at")
				require.Contains(t, got.Help, got.Why)
				require.Contains(t, got.Help, "install bubblewrap")
			}
			got.Why, got.Help = "", ""
			require.Equal(t, tc.want, got)
		})
	}
}
