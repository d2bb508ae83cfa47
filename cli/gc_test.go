package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/retention"
)

// oldFile writes content to path under the state directory, last changed
// ago.
func oldFile(t *testing.T, path, content string, ago time.Duration) string {
	t.Helper()
	writeStateFile(t, path, content)
	when := time.Now().Add(-ago)
	require.NoError(t, os.Chtimes(path, when, when))
	return path
}

func blobRef(i int) (string, string) {
	sum := fmt.Sprintf("%064x", i)
	return sum, `{"role":"assistant","content":"[custos-blob sha256:` + sum + ` 9000 bytes]"}` + "\n"
}

// TestGCAndDU runs du, gc --dry-run and gc on a state directory of their
// own, with a real server that has one job open: its files stay whatever
// their age, the ended job's go, and so do an unused cache and an old
// quarantine.
func TestGCAndDU(t *testing.T) {
	c := jobEnv(t, "gc: no model call", demomodel.Script())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	openID := fmt.Sprintf("gc-open/%d", time.Now().UnixNano())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: openID, TaskQueue: "custos-gc-test-nobody-polls"}, "NoWorker")
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.TerminateWorkflow(context.Background(), openID, run.GetRunID(), "test over") })
	require.Eventually(t, func() bool { open, err := app.OpenJobs(ctx, c); return err == nil && open[openID] }, time.Minute, 100*time.Millisecond)

	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	ws := "/home/someone/app"
	wsDir, err := statedir.WorkspaceDir(ws)
	require.NoError(t, err)
	state := filepath.Dir(filepath.Dir(wsDir))
	writeStateFile(t, filepath.Join(wsDir, "workspace"), ws)
	sum1, ref1 := blobRef(1)
	sum2, ref2 := blobRef(2)
	const month = 40 * 24 * time.Hour
	ended := oldFile(t, filepath.Join(wsDir, "sessions", "ended.jsonl"), ref1, month)
	endedAudit := oldFile(t, filepath.Join(wsDir, "audit", "ended.jsonl"), "{}\n", month)
	blob1 := oldFile(t, filepath.Join(wsDir, "sessions", "blobs", sum1), "x", month)
	live := oldFile(t, filepath.Join(wsDir, "sessions", retention.FileName(openID)+".jsonl"), ref2, 10*month)
	liveAudit := oldFile(t, filepath.Join(wsDir, "audit", retention.FileName(openID)+".jsonl"), "{}\n", 10*month)
	blob2 := oldFile(t, filepath.Join(wsDir, "sessions", "blobs", sum2), "y", 10*month)
	cache := filepath.Join(state, "sandbox-cache", "0123abcd")
	oldFile(t, filepath.Join(cache, "used"), "", month)
	writeStateFile(t, filepath.Join(cache, "size"), "4096")
	writeStateFile(t, filepath.Join(cache, "workspace"), ws)
	oldFile(t, filepath.Join(cache, "lock"), "", month)
	q := filepath.Join(state, "quarantine", "20250101T000000Z-app-0a0b")
	oldFile(t, filepath.Join(q, "hooks", "pre-commit"), "#!/bin/sh\n", month)
	require.NoError(t, os.Chtimes(q, time.Now().Add(-month), time.Now().Add(-month)))

	code, out, errOut := runApp(t, ctx, "du")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, ws)
	assert.Contains(t, out, "transcripts")
	assert.Contains(t, out, "state directory "+state)

	code, out, errOut = runApp(t, ctx, "gc", "--dry-run")
	require.Equal(t, 0, code, errOut)
	for _, p := range []string{ended, blob1, cache, q} {
		assert.Contains(t, out, "would remove "+p+" ")
		_, err := os.Lstat(p)
		assert.NoError(t, err, "a dry run removes nothing")
	}
	for _, p := range []string{live, liveAudit, blob2, endedAudit} {
		assert.NotContains(t, out, p)
	}
	assert.Contains(t, out, "would free")

	code, out, errOut = runApp(t, ctx, "gc", "--json")
	require.Equal(t, 0, code, errOut)
	var reps []app.GCReport
	require.NoError(t, json.Unmarshal([]byte(out), &reps), out)
	require.NotEmpty(t, reps)
	assert.Equal(t, 1, reps[0].Result.Removed[retention.Transcripts])
	assert.Equal(t, 1, reps[0].Result.Removed[retention.Blobs])
	assert.Equal(t, 1, reps[0].Result.Removed[retention.Caches])
	assert.Equal(t, 1, reps[0].Result.Removed[retention.Quarantine])
	for _, p := range []string{ended, blob1, cache, q} {
		assert.NoFileExists(t, p)
		assert.NoDirExists(t, p)
	}
	for _, p := range []string{live, liveAudit, blob2, endedAudit} {
		assert.FileExists(t, p, "kept: an open job's, a blob it names, an audit younger than a year")
	}

	code, out, errOut = runApp(t, ctx, "gc")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "freed 0 B in all")
}

// TestGCWithoutServerKeepsJobFiles: when no server says which jobs are
// open, gc removes no job file, however old.
func TestGCWithoutServerKeepsJobFiles(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("TEMPORAL_CONFIG_FILE", filepath.Join(t.TempDir(), "none.toml"))
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	wsDir, err := statedir.WorkspaceDir("/home/someone/app")
	require.NoError(t, err)
	old := oldFile(t, filepath.Join(wsDir, "sessions", "ended.jsonl"), "{}\n", 400*24*time.Hour)
	code, out, errOut := runApp(t, context.Background(), "gc")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "no transcript, audit or blob is removed")
	assert.Contains(t, out, "open jobs unknown")
	assert.FileExists(t, old)
}

func writeStateFile(t *testing.T, p, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
}
