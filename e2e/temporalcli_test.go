package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/workflows"
)

// temporalCLI finds the real Temporal CLI: on PATH or in GOPATH/bin, where
// `make deps` installs it.
func temporalCLI(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("temporal"); err == nil {
		return p
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	require.NoError(t, err)
	p := filepath.Join(strings.TrimSpace(string(out)), "bin", "temporal")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("the Temporal CLI is not installed (make deps installs it): %v", err)
	}
	return p
}

// People approve from the Temporal CLI exactly as the README says: a query
// shows the pending call, a signal decides it.
func TestTemporalCLIQueriesAndApproves(t *testing.T) {
	cli := temporalCLI(t)
	srv := startServer(t, "", 0)
	c := dial(t, srv)
	_, base := startModel(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "cli.txt", "content": "approved from the CLI"})),
		demomodel.Say("done"),
	))
	w, err := app.Start(c, app.Options{BaseURL: base, APIKey: "k", Model: "fake", UserConfigDir: t.TempDir(), Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	ws := workspace(t)
	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "cli-approval", TaskQueue: activities.TaskQueue},
		workflows.WorkflowName, workflows.JobInput{Task: "write it", Workspace: ws})
	require.NoError(t, err)
	waitPending(t, c, run.GetID(), "w1")

	temporal := func(args ...string) string {
		cmd := exec.Command(cli, append(append(args, srv.TLSFiles().TemporalCLIFlags(srv.FrontendAddr())...), "--namespace", "default")...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "temporal %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	out := temporal("workflow", "query", "--workflow-id", run.GetID(), "--type", "status", "--output", "json")
	assert.Contains(t, out, `"callId": "w1"`)
	temporal("workflow", "signal", "--workflow-id", run.GetID(), "--name", "approval",
		"--input", `{"callId":"w1","decision":"allow","by":"temporal-cli"}`)

	gctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, run.Get(gctx, nil))
	assert.Equal(t, "approved from the CLI", readFile(t, ws, "cli.txt"))
	recs, err := activities.ReadAudit(ws, run.GetID())
	require.NoError(t, err)
	assert.Equal(t, "temporal-cli", decisionsByCall(recs)["w1"].Approver)

	// The audit query answers the CLI too.
	out = temporal("workflow", "query", "--workflow-id", run.GetID(), "--type", "audit", "--output", "json")
	var parsed any
	assert.NoError(t, json.Unmarshal([]byte(out), &parsed), out)
	assert.Contains(t, out, "temporal-cli")
}
