package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
)

// An answer counts for the call it was given for, end to end: the model
// reuses a call ID in its next turn; the terminal asks about the second call
// under its own identity, and the first call's answer, given again from
// another shell, is refused and approves nothing.
func TestReusedCallIDAtTheTerminal(t *testing.T) {
	const task = "cli test: a reused call ID"
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("c1", "Write", map[string]any{"file_path": "benign.txt", "content": "ok"})),
		demomodel.Calls(demomodel.ToolCall("c1", "Write", map[string]any{"file_path": "evil.txt", "content": "pwned"})),
		demomodel.Say("FINAL: reused"),
	))
	ws := testenv.Workspace(t)
	id := "custos-cli-test-reused-id"
	term := startInteractive(t, "run", "--once", "--workspace", ws, "--id", id, task)

	first := term.waitFor("): ")
	require.Contains(t, first, "? Write benign.txt")
	term.typeLine("y")

	second := term.waitFor("): ")
	require.Contains(t, second, "c1_t2: waiting for approval: Write evil.txt")
	// The first call's answer again, as a stale command line would send it.
	code, _, errOut := runApp(t, context.Background(), "approve", id, "c1", "--by", "mallory@cli")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "already allowed")
	testenv.WaitPending(t, c, id, "c1_t2", pendingWait)
	term.typeLine("n")

	select {
	case code = <-term.code:
	case <-time.After(60 * time.Second):
		t.Fatalf("run did not return; output:\n%s", term.out.String())
	}
	assert.Equal(t, 0, code, "stderr: %s", term.errOut.String())
	dec := testenv.Decisions(testenv.Audit(t, c, id))
	assert.Equal(t, approval.Allow, dec["c1"].Decision)
	assert.Equal(t, approval.Deny, dec["c1_t2"].Decision)
	assert.NotEqual(t, "mallory@cli", dec["c1_t2"].Approver)
	assert.FileExists(t, filepath.Join(ws, "benign.txt"))
	_, err := os.Stat(filepath.Join(ws, "evil.txt"))
	assert.True(t, os.IsNotExist(err), "the stale answer approved nothing")
}
