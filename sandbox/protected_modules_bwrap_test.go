package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/internal/gittest"
)

func runIn(t *testing.T, sb *bwrapSandbox, ws, script string, timeout time.Duration) Result {
	t.Helper()
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash(script), Timeout: timeout})
	require.NoError(t, err)
	return res
}

// A deinit'ed submodule's git directory within the protected depth refuses
// writes to its hooks and config from inside, like the main one.
func TestBwrapProtectedDeinitSubmodule(t *testing.T) {
	sb := newBwrap(t, Config{}).(*bwrapSandbox)
	ws := t.TempDir()
	gittest.NewRepo(t, filepath.Join(ws, "upstream"))
	gittest.NewRepo(t, ws)
	gittest.Run(t, ws, "submodule", "add", "-q", "./upstream", "sub")
	gittest.Run(t, ws, "commit", "-qm", "add sub")
	gittest.Run(t, ws, "submodule", "deinit", "-q", "-f", "sub")
	require.NoError(t, os.RemoveAll(filepath.Join(ws, ".git", "modules", "sub", "hooks")))
	for _, script := range []string{
		"echo x >> .git/modules/sub/config",
		"mkdir -p .git/modules/sub/hooks && echo x > .git/modules/sub/hooks/post-checkout",
		"echo x > .git/modules/sub/config.worktree",
	} {
		res := runIn(t, sb, ws, script, 30*time.Second)
		assert.NotZero(t, res.ExitCode, "%s must be refused", script)
		// Refused loudly: the read-only bind of config, or the hooks
		// placeholder (an empty directory of the sandbox's own, mode 0555).
		assert.Regexp(t, "Read-only file system|Permission denied", res.Stderr, script)
	}
	assert.NoFileExists(t, filepath.Join(ws, ".git", "modules", "sub", "hooks", "post-checkout"))
}

// Git directories of submodules the plan must protect however it reaches
// them: one cut off half-way (no HEAD yet: a command could write its config
// and hooks, then the HEAD), and one reached first through a pointer file
// (it gets its hooks placeholder when the walk reaches it as a module).
func TestBwrapProtectedModulesEveryWay(t *testing.T) {
	sb := newBwrap(t, Config{}).(*bwrapSandbox)
	t.Run("half-made", func(t *testing.T) {
		ws := t.TempDir()
		gittest.NewRepo(t, ws)
		writeFile(t, filepath.Join(ws, ".git", "modules", "sub", "config"), "[core]\n\tbare = false\n")
		for _, script := range []string{"echo x >> .git/modules/sub/config", "mkdir -p .git/modules/sub/hooks && echo x > .git/modules/sub/hooks/post-checkout"} {
			res := runIn(t, sb, ws, script, 30*time.Second)
			assert.NotZero(t, res.ExitCode, "%s must be refused", script)
		}
		assert.NoFileExists(t, filepath.Join(ws, ".git", "modules", "sub", "hooks", "post-checkout"))
	})
	t.Run("pointer first", func(t *testing.T) {
		ws := t.TempDir()
		repo := filepath.Join(ws, "z", "q")
		gittest.NewRepo(t, filepath.Join(ws, "upstream"))
		gittest.NewRepo(t, repo)
		gittest.Run(t, repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", filepath.Join(ws, "upstream"), "sub")
		require.NoError(t, os.RemoveAll(filepath.Join(repo, ".git", "modules", "sub", "hooks")))
		// a/.git, listed before z/q, points into z/q's modules.
		writeFile(t, filepath.Join(ws, "a", ".git"), "gitdir: ../z/q/.git/modules/sub\n")
		res := runIn(t, sb, ws, "mkdir -p z/q/.git/modules/sub/hooks && echo x > z/q/.git/modules/sub/hooks/post-checkout", 30*time.Second)
		assert.NotZero(t, res.ExitCode)
		assert.NoFileExists(t, filepath.Join(repo, ".git", "modules", "sub", "hooks", "post-checkout"))
	})
}
