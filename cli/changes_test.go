package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/gittest"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// changes shows each turn's diffs under the call that made them; rewind
// puts the files back as they were at a turn, refusing to overwrite a file
// someone else changed, cuts the conversation there, and the job waits
// for the next message, which the model gets after that turn's answer.
func TestChangesAndRewind(t *testing.T) {
	const task = "cli test: changes and rewind"
	model := &recorded{next: demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "a.txt", "content": "one\n"})),
		demomodel.Say("FIRST answer"),
		demomodel.Calls(
			demomodel.ToolCall("e1", "Edit", map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "two"}),
			demomodel.ToolCall("w2", "Write", map[string]any{"file_path": "new/b.txt", "content": "b\n"})),
		demomodel.Say("SECOND answer"),
		demomodel.Say("THIRD answer"),
	)}
	c := jobEnv(t, task, model.handle)
	ws := testenv.Workspace(t)
	const id = "custos-cli-rewind"
	code, out, errOut := runApp(t, context.Background(), "run", "--workspace", ws, "--mode", "acceptEdits", "--id", id, task)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "FIRST answer")
	code, out, errOut = runApp(t, context.Background(), "say", id, "go on")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "SECOND answer")

	tests := []struct {
		name     string
		args     []string
		contains []string
		excludes []string
	}{
		{name: "every turn", args: []string{"changes", id},
			contains: []string{"turn 1  Write", "turn 3  Edit", "turn 3  Write", "+++ b/a.txt", "-one", "+two", "--- /dev/null", "+++ b/new/b.txt", "new: nothing → directory"}},
		{name: "one turn", args: []string{"changes", id, "--turn", "3"},
			contains: []string{"turn 3  Edit"}, excludes: []string{"turn 1  Write"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runApp(t, context.Background(), tc.args...)
			require.Equal(t, 0, code, errOut)
			for _, s := range tc.contains {
				assert.Contains(t, out, s)
			}
			for _, s := range tc.excludes {
				assert.NotContains(t, out, s)
			}
		})
	}

	// Someone else changed new/b.txt: the rewind stops and names it.
	b := filepath.Join(ws, "new", "b.txt")
	require.NoError(t, os.WriteFile(b, []byte("theirs\n"), 0o644))
	code, out, _ = runApp(t, context.Background(), "rewind", id, "--to", "2")
	require.NotEqual(t, 0, code, out)
	assert.Contains(t, out, "new/b.txt: the job left a file")
	assertFile(t, filepath.Join(ws, "a.txt"), "two\n")

	require.NoError(t, os.WriteFile(b, []byte("b\n"), 0o644))
	code, out, errOut = runApp(t, context.Background(), "rewind", id, "--to", "2")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "files: 3 paths put back as they were at turn 2")
	assert.Contains(t, out, "conversation: cut at the end of turn 2")
	assertFile(t, filepath.Join(ws, "a.txt"), "one\n")
	_, err := os.Lstat(filepath.Join(ws, "new"))
	assert.True(t, os.IsNotExist(err), "the directory the job made after turn 2 is gone")

	require.Eventually(t, func() bool {
		st, err := testenv.Status(c, id)
		return err == nil && st.State == jobapi.PhaseWaitingMessage
	}, 30*time.Second, 50*time.Millisecond)
	code, out, errOut = runApp(t, context.Background(), "say", id, "after the rewind")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "THIRD answer")
	last := model.count() - 1
	assert.Equal(t, []string{task, "after the rewind"}, model.turns(last, openai.ChatMessageRoleUser))
	assert.NotContains(t, model.turns(last, openai.ChatMessageRoleAssistant), "SECOND answer")
	var events []string
	for _, r := range testenv.Audit(t, c, id) {
		events = append(events, r.Event)
	}
	assert.Contains(t, strings.Join(events, " "), "rewind")
}

func assertFile(t *testing.T, path, want string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, want, string(data))
}

// fork starts a new job from a job's conversation at a turn, here in a new
// git worktree holding the files as they were then; the job forked and its
// workspace are untouched.
func TestForkIntoWorktree(t *testing.T) {
	const task = "cli test: fork"
	model := &recorded{next: demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "a.txt", "content": "one\n"})),
		demomodel.Say("FIRST answer"),
		demomodel.Calls(demomodel.ToolCall("e1", "Edit", map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "two"})),
		demomodel.Say("SECOND answer"),
		demomodel.Say("FORKED answer"),
	)}
	c := jobEnv(t, task, model.handle)
	ws := testenv.Workspace(t)
	gittest.NewRepo(t, ws)
	const id = "custos-cli-fork"
	code, _, errOut := runApp(t, context.Background(), "run", "--workspace", ws, "--mode", "acceptEdits", "--id", id, task)
	require.Equal(t, 0, code, errOut)
	code, out, errOut := runApp(t, context.Background(), "say", id, "go on")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "SECOND answer")

	wt := filepath.Join(t.TempDir(), "wt")
	code, out, errOut = runApp(t, context.Background(), "fork", id, "--at", "2", "--worktree", wt, "--id", id+"-f", "try", "again")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "forked "+id+" at turn 2")
	require.Eventually(t, func() bool {
		st, err := testenv.Status(c, id+"-f")
		return err == nil && st.State == jobapi.PhaseWaitingMessage && st.LastAnswer == "FORKED answer"
	}, 30*time.Second, 50*time.Millisecond)
	last := model.count() - 1
	assert.Equal(t, []string{task, "try again"}, model.turns(last, openai.ChatMessageRoleUser))
	assert.NotContains(t, model.turns(last, openai.ChatMessageRoleAssistant), "SECOND answer")
	assertFile(t, filepath.Join(wt, "a.txt"), "one\n")
	assertFile(t, filepath.Join(ws, "a.txt"), "two\n")
	assertFile(t, filepath.Join(wt, "README"), "hi\n")
	var events []string
	for _, r := range testenv.Audit(t, c, id+"-f") {
		events = append(events, r.Event)
	}
	assert.Contains(t, events, "fork")
}

// A rewind is refused while the job works (here a call waits for a
// person), by the command and by the job's rewind Update itself.
func TestRewindRefusedWhileWorking(t *testing.T) {
	const task = "cli test: rewind while a call waits"
	c := jobEnv(t, task, demomodel.Script(writeTo("w1", "a.txt"), demomodel.Say("done")))
	ws := testenv.Workspace(t)
	id := startDetached(t, ws, task, "--approval-timeout", "10m")
	testenv.WaitPending(t, c, id, "w1", pendingWait)

	code, out, errOut := runApp(t, context.Background(), "rewind", id, "--to", "0")
	require.NotEqual(t, 0, code, out)
	assert.Contains(t, errOut, "a rewind waits until no tool call runs")

	h, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: jobapi.RewindUpdate,
		Args: []any{jobapi.Rewind{To: 0, Conversation: true, By: "test"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(context.Background(), nil)
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a rewind waits until it waits for a message")
	assertNoFile(t, filepath.Join(ws, "a.txt"))
}

func assertNoFile(t *testing.T, path string) {
	t.Helper()
	_, err := os.Lstat(path)
	assert.True(t, os.IsNotExist(err), "%s exists", path)
}
