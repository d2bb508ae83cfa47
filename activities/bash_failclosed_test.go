package activities

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/sandbox"
)

// With sandbox.failIfUnavailable in the job's settings, Bash on a worker
// without bubblewrap refuses to run; without it, the command runs and the
// result says it ran without OS isolation.
func TestBashFailIfUnavailable(t *testing.T) {
	sb, err := sandbox.New(sandbox.Config{BwrapPath: "/nonexistent/bwrap"})
	require.NoError(t, err)
	tools := &Tools{Sandbox: sb}
	for _, tc := range []struct {
		name     string
		strict   bool
		wantErr  bool
		contains string
	}{
		{"strict settings refuse", true, true, "require the OS sandbox"},
		{"default falls back", false, false, "WITHOUT OS isolation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivity(tools.Bash)
			ws := t.TempDir()
			val, err := env.ExecuteActivity(tools.Bash, ToolRequest{
				Workspace: ws,
				Input:     json.RawMessage(`{"command":"echo ran > ran.txt; echo ran"}`),
				Sandbox:   approval.SandboxSettings{FailIfUnavailable: tc.strict},
			})
			require.NoError(t, err)
			var res ToolResult
			require.NoError(t, val.Get(&res))
			require.Equal(t, tc.wantErr, res.IsError, res.Output)
			require.Contains(t, res.Output, tc.contains)
			_, statErr := os.Stat(filepath.Join(ws, "ran.txt"))
			require.Equal(t, tc.strict, statErr != nil, "the command ran only without the strict setting")
		})
	}
}
