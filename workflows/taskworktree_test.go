package workflows

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
)

func worktreeCall(id, description, prompt string) openai.ToolCall {
	return call(id, api.TaskTool, map[string]any{"description": description, "prompt": prompt, "isolation": "worktree"})
}

// gitRepo makes dir a git repository with one commit of a.txt.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"config", "user.email", "t@test"}, {"config", "user.name", "t"},
		{"add", "-A"}, {"commit", "-q", "-m", "first"},
	} {
		if args[0] == "add" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("A\n"), 0o644))
		}
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// A worktree child in a git workspace: it works in a worktree of its own
// under custos' state directory, on the branch custos/CHILD; what it
// writes is there, not in the user's working tree; the result names the
// worktree and the branch; the user's repository gained only the
// worktree's record and the branch. Its commands cannot write the main
// repository's config or hooks through the worktree's .git file.
func TestTaskWorktreeChildWorksInItsOwnWorktree(t *testing.T) {
	m := newByTask(map[string]demomodel.Handler{
		"test task": demomodel.Script(demomodel.Calls(worktreeCall("a", "isolated", "work apart")), demomodel.Say("done")),
		"work apart": demomodel.Script(
			demomodel.Calls(call("w", "Write", map[string]any{"file_path": "b.txt", "content": "B\n"})),
			demomodel.Calls(call("e", "Write", map[string]any{"file_path": "evil.sh", "content": `common=$(git rev-parse --git-common-dir)
echo '[core]' >> "$common/config" || echo config refused
echo 'touch /tmp/pwned' > "$common/hooks/post-checkout" || echo hooks refused
echo gitdir: /tmp > .git || echo pointer refused
`})),
			demomodel.Calls(call("s", "Bash", map[string]any{"command": "sh evil.sh; cat b.txt"})),
			demomodel.Say("wrote b.txt")),
	})
	h := newHarness(t, m.handle)
	gitRepo(t, h.ws)
	cfgBefore := h.file(".git/config")
	h.input.Mode = approval.ModeBypass
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	child := "default-test-workflow-id-task-a"
	got := h.toolResults()["a"]
	made, _ := filepath.Glob(filepath.Join(h.stateDir, "worktrees", child+"*"))
	require.Len(t, made, 1, "one worktree, in the state directory")
	wt := made[0]
	assert.Contains(t, got, "own git worktree "+wt+", on the branch custos/"+child)
	assert.Contains(t, got, "Files it changed with Write or Edit: b.txt, evil.sh.")
	assert.Empty(t, h.file("b.txt"), "the user's working tree is untouched")
	b, err := os.ReadFile(filepath.Join(wt, "b.txt"))
	require.NoError(t, err)
	assert.Equal(t, "B\n", string(b))
	assert.Equal(t, "custos/"+child, gitIn(t, wt, "rev-parse", "--abbrev-ref", "HEAD"))
	assert.Contains(t, gitIn(t, h.ws, "branch", "--list", "custos/*"), "custos/"+child)
	assert.Equal(t, cfgBefore, h.file(".git/config"), "the main repository's config is not written through the worktree")
	_, err = os.Stat(filepath.Join(h.ws, ".git", "hooks", "post-checkout"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nor its hooks")
	dotgit, err := os.ReadFile(filepath.Join(wt, ".git"))
	require.NoError(t, err)
	assert.Equal(t, "gitdir: "+filepath.Join(h.ws, ".git", "worktrees", filepath.Base(wt))+"\n", string(dotgit), "nor is the worktree's .git re-pointed")
	bash := m.requests("work apart")[3].Messages
	out := bash[len(bash)-1].Content
	for _, want := range []string{"config refused", "hooks refused", "pointer refused", "B\n"} {
		assert.Contains(t, out, want, "its commands run in the worktree, and what git protects stays protected")
	}
}

// A worktree child where the workspace is no git repository: a clear
// result, and no child runs.
func TestTaskWorktreeRefusedOutsideGit(t *testing.T) {
	m := newByTask(map[string]demomodel.Handler{
		"test task": demomodel.Script(demomodel.Calls(worktreeCall("a", "isolated", "work apart")), demomodel.Say("done")),
	})
	h := newHarness(t, m.handle, withSettings(allowTask))
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	assert.Contains(t, h.toolResults()["a"], `Task: isolation "worktree" needs a git repository, and the workspace `+h.ws+" is not in one")
	assert.Empty(t, m.requests("work apart"))
}
