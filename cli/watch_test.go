package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
)

// `watch` with no job finds every job that waits, in any workspace, and
// prompts for each call; the answers run or refuse the calls.
func TestWatchEveryWaitingJob(t *testing.T) {
	const taskA, taskB = "cli test: watch job A", "cli test: watch job B"
	c := jobEnv(t, taskA, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("wa", "Write", map[string]any{"file_path": "a.txt", "content": "A\n"})),
		demomodel.Say("A done"),
	))
	jobEnv(t, taskB, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("wb", "Edit", map[string]any{"file_path": "b.txt", "old_string": "old", "new_string": "new"})),
		demomodel.Say("B done"),
	))
	wsA, wsB := testenv.Workspace(t), testenv.Workspace(t)
	require.NoError(t, os.WriteFile(filepath.Join(wsB, "b.txt"), []byte("old\n"), 0o644))
	idA := startDetached(t, wsA, taskA)
	idB := startDetached(t, wsB, taskB)
	testenv.WaitPending(t, c, idA, "wa", pendingWait)
	testenv.WaitPending(t, c, idB, "wb", pendingWait)

	t.Setenv("USER", "watcher")
	term := startInteractive(t, "watch")
	answered := map[string]bool{}
	for len(answered) < 2 {
		screen := term.waitFor("(denied in ")
		term.waitFor("): ")
		switch {
		case strings.Contains(screen, "["+idA+"] "+taskA):
			assert.Contains(t, screen, "wa: waiting for approval: Write a.txt")
			assert.Contains(t, screen, "    │ +A\n", "the preview shows the new file")
			term.typeLine("y")
			answered[idA] = true
		case strings.Contains(screen, "["+idB+"] "+taskB):
			assert.Contains(t, screen, "    │ -old\n    │ +new\n", "the preview shows the edit's diff")
			term.typeLine("n")
			answered[idB] = true
		default:
			term.typeLine("n") // a job left waiting by another test
		}
	}
	resA := testenv.Finished(t, c, idA, time.Minute)
	assert.Equal(t, "A done", resA.Answer)
	testenv.Finished(t, c, idB, time.Minute)
	term.waitFor("wb: denied Edit b.txt, by watcher via terminal")
	term.cancel()
	select {
	case code := <-term.code:
		assert.Equal(t, 0, code)
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not stop on Ctrl-C")
	}
	b, err := os.ReadFile(filepath.Join(wsA, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "A\n", string(b))
	b, err = os.ReadFile(filepath.Join(wsB, "b.txt"))
	require.NoError(t, err)
	assert.Equal(t, "old\n", string(b))
	assert.Equal(t, "watcher", testenv.Decisions(testenv.Audit(t, c, idA))["wa"].Approver)
	assert.Equal(t, approval.Deny, testenv.Decisions(testenv.Audit(t, c, idB))["wb"].Decision)
}

// `watch JOB` refuses a job that has ended, and says so.
func TestWatchEndedJob(t *testing.T) {
	const task = "cli test: watch ended"
	c := jobEnv(t, task, demomodel.Script(demomodel.Say("over")))
	id := startDetached(t, testenv.Workspace(t), task)
	testenv.Finished(t, c, id, time.Minute)
	code, _, errOut := runApp(t, context.Background(), "watch", id)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "cannot watch "+id+": the job has ended (completed)")
}
