//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/internal/gittest"
	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/provision"
)

// overlayOn is sb with its overlay required: the tests below are about it.
func overlayOn(t *testing.T, sb *bwrapSandbox) *bwrapSandbox {
	t.Helper()
	require.NotNil(t, sb.step, "the mount step is off: %s", sb.why)
	require.True(t, sb.overlay, "the workspace overlay is off: %s", sb.why)
	return sb
}

// TestBwrapOverlayHidesWritesUntilChecked: while a command runs, what it
// writes (a new repository whose config runs a program, a plain file) is
// not on the host, where an editor or a prompt could act on it; once it
// has ended, the file is there and the repository is too, neutralised.
// The control, the same sandbox without the overlay, shows the host seeing
// the repository while the command still runs.
func TestBwrapOverlayHidesWritesUntilChecked(t *testing.T) {
	cacheRoot := t.TempDir()
	t.Cleanup(func() { _ = hostfs.RemoveAllWritable(cacheRoot) })
	sb := overlayOn(t, newBwrap(t, Config{CacheDir: cacheRoot}).(*bwrapSandbox))
	flag := filepath.Join(t.TempDir(), "FLAG")
	for _, overlay := range []bool{true, false} {
		t.Run(fmt.Sprintf("overlay=%v", overlay), func(t *testing.T) {
			run := *sb
			run.overlay = overlay
			ws := mustEval(t, t.TempDir())
			require.NoError(t, os.WriteFile(filepath.Join(ws, "kept"), []byte("old\n"), 0o644))
			// The command and the test meet in the workspace's cache, which
			// both see as it is (a bind mount, not the overlay).
			shared := filepath.Join(provision.CacheDirFor(cacheRoot, ws), "cache")
			script := "git init -q sub && git -C sub config core.fsmonitor 'touch " + flag + "' && echo made > notes.txt && rm kept && " +
				"touch " + provision.CacheInside + "/ready && i=0; while [ ! -e " + provision.CacheInside + "/go ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done"
			type outcome struct {
				res Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := run.Run(context.Background(), Request{Workspace: ws, Argv: []string{"/bin/sh", "-c", script}, Timeout: 60 * time.Second})
				done <- outcome{res, err}
			}()
			require.Eventually(t, func() bool {
				_, err := os.Stat(filepath.Join(shared, "ready"))
				return err == nil
			}, 30*time.Second, 20*time.Millisecond, "the command never got going")
			_, subErr := os.Lstat(filepath.Join(ws, "sub"))
			_, notesErr := os.Lstat(filepath.Join(ws, "notes.txt"))
			_, keptErr := os.Lstat(filepath.Join(ws, "kept"))
			if overlay {
				assert.ErrorIs(t, subErr, os.ErrNotExist, "the new repository is on the host while the command runs")
				assert.ErrorIs(t, notesErr, os.ErrNotExist, "a written file is on the host while the command runs")
				assert.NoError(t, keptErr, "a removed file is gone from the host while the command runs")
			} else {
				require.NoError(t, subErr, "control: without the overlay the host sees the repository at once")
				assert.True(t, gittest.Runs(t, flag, filepath.Join(ws, "sub"), "status"), "control: git on the host runs the planted fsmonitor mid-command")
			}
			require.NoError(t, os.WriteFile(filepath.Join(shared, "go"), nil, 0o644))
			out := <-done
			require.NoError(t, out.err)
			require.Equal(t, 0, out.res.ExitCode, out.res.Stderr)
			b, err := os.ReadFile(filepath.Join(ws, "notes.txt"))
			require.NoError(t, err, "the command's file is applied once it ended")
			assert.Equal(t, "made\n", string(b))
			_, err = os.Lstat(filepath.Join(ws, "kept"))
			assert.ErrorIs(t, err, os.ErrNotExist, "the command's removal is applied")
			assert.Contains(t, fmt.Sprint(out.res.HostConfig), "sub/.git/config", "the planted config is named")
			assert.False(t, gittest.Runs(t, flag, filepath.Join(ws, "sub"), "status"), "the planted fsmonitor runs on the host after the check")
			_, err = os.Stat(filepath.Join(ws, "sub", ".git", "HEAD"))
			assert.NoError(t, err, "the repository itself is applied")
			// The run's overlay, kept for the next run, is empty.
			overlays, _ := filepath.Glob(filepath.Join(sb.cfg.guard().OverlayRoot(), hostfs.WorkspaceKey(ws)+"-*", "upper", "*"))
			assert.Empty(t, overlays, "what the command wrote is left in its upper layer")
		})
	}
}

// TestBwrapOverlayOrdinaryWork: the work builds and tests do runs on the
// overlay as on the host (files made, changed, renamed, removed,
// directories made and removed, a symlink, modes), git commits in the
// user's own repository, and nothing of it is called host config.
func TestBwrapOverlayOrdinaryWork(t *testing.T) {
	sb := overlayOn(t, newBwrap(t, Config{}).(*bwrapSandbox))
	ws := mustEval(t, t.TempDir())
	gittest.NewRepo(t, ws)
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "src", "old"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "src", "a.txt"), []byte("a\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "src", "old", "x"), []byte("x\n"), 0o644))
	gittest.Run(t, ws, "add", ".")
	gittest.Run(t, ws, "commit", "-qm", "base")
	script := `set -e
echo more >> src/a.txt
mkdir -p build/out && echo bin > build/out/prog && chmod 755 build/out/prog
mv src/a.txt src/b.txt
rm -r src/old
ln -s b.txt src/link
git add -A && git -c user.name=u -c user.email=u@x.invalid commit -qm work
git log --oneline | wc -l`
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: []string{"/bin/sh", "-c", script}, Timeout: 60 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	assert.Equal(t, "3\n", res.Stdout)
	assert.Empty(t, res.HostConfig, "ordinary work reported as host config")
	assert.Empty(t, res.Unmerged)
	b, err := os.ReadFile(filepath.Join(ws, "src", "b.txt"))
	require.NoError(t, err)
	assert.Equal(t, "a\nmore\n", string(b))
	fi, err := os.Stat(filepath.Join(ws, "build", "out", "prog"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	for _, gone := range []string{"src/a.txt", "src/old"} {
		_, err := os.Lstat(filepath.Join(ws, gone))
		assert.ErrorIs(t, err, os.ErrNotExist, gone)
	}
	target, err := os.Readlink(filepath.Join(ws, "src", "link"))
	require.NoError(t, err)
	assert.Equal(t, "b.txt", target)
	// git on the host sees the commit the command made, and a clean tree.
	out, err := exec.Command("git", "-C", ws, "log", "--format=%s").Output()
	require.NoError(t, err)
	assert.Equal(t, "work\nbase\ninit\n", string(out))
	out, err = exec.Command("git", "-C", ws, "status", "--porcelain").Output()
	require.NoError(t, err)
	assert.Empty(t, string(out))
}
