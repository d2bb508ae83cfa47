package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/settingsfile"
	"github.com/custos-dev/custos/workflows"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// A job of this release with the steps a job waiting across an upgrade goes
// through: an allowed Read, a Write approved through the decide Update, a
// Bash command allowed by a workspace rule and run on a lane, a Write denied
// through the Update, an answer. Its history replays against this code; with
// CUSTOS_RECORD_HISTORIES=dir it is written to dir/release_history.json,
// which workflows/replay_release_test.go keeps replaying against later
// releases (docs/upgrades.md says when to record again).
func TestReleaseHistoryReplays(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	model, base := testenv.StartModel(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("r1", "Read", map[string]any{"file_path": "a.txt"})),
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "b.txt", "content": "b"})),
		demomodel.Calls(demomodel.ToolCall("b1", "Bash", map[string]any{"command": "echo ran-on-a-lane"})),
		demomodel.Calls(demomodel.ToolCall("w2", "Write", map[string]any{"file_path": "d.txt", "content": "d"})),
		demomodel.Say("release recorded"),
	))
	ws := testenv.Workspace(t)
	cfg := t.TempDir()
	require.NoError(t, settingsfile.Trust(cfg, ws))
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".custos"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", "settings.json"),
		[]byte(`{"permissions":{"allow":["Bash(echo *)"]}}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha"), 0o644))
	testenv.StartWorkers(t, c, base, app.Options{UserConfigDir: cfg})

	ctx := context.Background()
	run := testenv.StartJob(t, c, "release-"+time.Now().Format("150405.000000"), jobapi.JobInput{Once: true, Task: "record this release", Workspace: ws})
	decide := func(callID, decision string) {
		testenv.WaitPending(t, c, run.GetID(), callID, pendingWait)
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: jobapi.DecideUpdate,
			Args:         []any{jobapi.ApprovalDecision{CallID: callID, Decision: decision, By: "e2e", Channel: "cli"}},
			WaitForStage: client.WorkflowUpdateStageCompleted})
		require.NoError(t, err)
		require.NoError(t, h.Get(ctx, nil))
	}
	decide("w1", "allow")
	decide("w2", "deny")
	res := testenv.Finished(t, c, run.GetID(), 2*time.Minute)
	require.Equal(t, "release recorded", res.Answer)
	require.Contains(t, testenv.ToolResult(model, "b1"), "ran-on-a-lane", "the Bash call ran")
	require.NoFileExists(t, filepath.Join(ws, "d.txt"), "the denied Write did not")

	hist := fetchHistory(t, c, run)
	require.NoError(t, replay(hist, &workflows.Agent{}))

	if dir := os.Getenv("CUSTOS_RECORD_HISTORIES"); dir != "" {
		writeHistory(t, hist, filepath.Join(dir, "release_history.json"))
	}
}
