package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/sandbox/provision"
	"github.com/custos-dev/custos/settingsfile"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// A job that reads, edits after an approval signal sent through the Temporal
// client, runs Bash, and finishes with the file changed and the audit complete.
func TestJobReadEditBash(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	model, base := testenv.StartModel(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("r1", "Read", map[string]any{"file_path": "greet.txt"})),
		demomodel.Calls(demomodel.ToolCall("e1", "Edit", map[string]any{"file_path": "greet.txt", "old_string": "hello", "new_string": "goodbye"})),
		demomodel.Calls(demomodel.ToolCall("b1", "Bash", map[string]any{"command": "cat greet.txt"})),
		demomodel.Say("changed hello to goodbye"),
	))
	ws := testenv.Workspace(t)
	cfg := t.TempDir()
	// The workspace's allow rule counts only for a workspace the user trusts.
	require.NoError(t, settingsfile.Trust(cfg, ws))
	testenv.StartWorkers(t, c, base, app.Options{UserConfigDir: cfg})

	require.NoError(t, os.WriteFile(filepath.Join(ws, "greet.txt"), []byte("hello world\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".custos"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", "settings.json"),
		[]byte(`{"permissions":{"allow":["Bash(cat *)"]}}`), 0o644))

	ctx := context.Background()
	run := testenv.StartJob(t, c, "e2e-"+t.Name(), jobapi.JobInput{Once: true, Task: "say goodbye", Workspace: ws, ApprovalTimeout: 10 * time.Minute})

	testenv.WaitPending(t, c, run.GetID(), "e1", pendingWait)
	assert.Equal(t, "hello world\n", readFile(t, ws, "greet.txt"), "nothing changes before approval")
	require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), "", jobapi.ApprovalSignal,
		jobapi.ApprovalDecision{CallID: "e1", Decision: "allow", By: "e2e"}))

	res := testenv.Finished(t, c, run.GetID(), 2*time.Minute)
	assert.Equal(t, "changed hello to goodbye", res.Answer)
	assert.Equal(t, "goodbye world\n", readFile(t, ws, "greet.txt"))

	// The Bash result the model saw is the command's output.
	bashOut := testenv.ToolResult(model, "b1")
	assert.Contains(t, bashOut, "goodbye world")

	// The audit trail (file and query agree) names the layer of every decision.
	recs, err := activities.ReadAudit(testenv.JobFiles(t, c, run.GetID()).Audit)
	require.NoError(t, err)
	dec := testenv.Decisions(recs)
	require.Len(t, dec, 3)
	assert.Equal(t, approval.LayerReadOnly, dec["r1"].Layer)
	assert.Equal(t, approval.LayerHuman, dec["e1"].Layer)
	assert.Equal(t, "e2e", dec["e1"].Approver)
	assert.Equal(t, approval.LayerRules, dec["b1"].Layer)
	assert.Equal(t, "Bash(cat *)", dec["b1"].Rule)
	for _, r := range dec {
		assert.Equal(t, approval.Allow, r.Decision)
	}
	assert.Equal(t, len(recs), len(testenv.Audit(t, c, run.GetID())))

	// The transcript is readable without Temporal, outside the workspace:
	// nothing of the job is in it for git to take.
	files := testenv.JobFiles(t, c, run.GetID())
	transcript := transcriptOf(t, c, run.GetID())
	assert.Equal(t, 9, strings.Count(transcript, "\n"), "system, user, 4 answers, 3 tool results")
	for _, p := range []string{files.Transcript, files.Audit} {
		assert.False(t, strings.HasPrefix(p, ws+string(filepath.Separator)), "%s is outside the workspace", p)
	}
	entries, err := os.ReadDir(filepath.Join(ws, ".custos"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the user's settings.json is in .custos")
	assert.Equal(t, "settings.json", entries[0].Name())

	// The Bash call's workspace cache is in the workers' state directory,
	// not in the user's (whose caches it would otherwise fill and evict).
	assert.Contains(t, cachedWorkspaces(t, filepath.Join(testenv.StateDir(), "sandbox-cache")), ws)
	userCaches, err := provision.DefaultCacheDir()
	require.NoError(t, err)
	assert.False(t, slices.Contains(cachedWorkspaces(t, userCaches), ws), "no cache for %s in the user's %s", ws, userCaches)
}

// cachedWorkspaces are the workspaces with a sandbox cache under root.
func cachedWorkspaces(t *testing.T, root string) []string {
	t.Helper()
	infos, err := provision.ListCaches(root)
	require.NoError(t, err)
	var out []string
	for _, in := range infos {
		out = append(out, in.Workspace)
	}
	return out
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	require.NoError(t, err)
	return string(b)
}

// transcriptOf reads job id's transcript, wherever its status says it is.
func transcriptOf(t *testing.T, c client.Client, id string) string {
	t.Helper()
	b, err := os.ReadFile(testenv.JobFiles(t, c, id).Transcript)
	require.NoError(t, err)
	return string(b)
}
