//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/hostguard"
	"github.com/custos-dev/custos/sandbox/overlaymerge"
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
				assert.True(t, hostGitRuns(t, flag, filepath.Join(ws, "sub"), "status"), "control: git on the host runs the planted fsmonitor mid-command")
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
			assert.False(t, hostGitRuns(t, flag, filepath.Join(ws, "sub"), "status"), "the planted fsmonitor runs on the host after the check")
			_, err = os.Stat(filepath.Join(ws, "sub", ".git", "HEAD"))
			assert.NoError(t, err, "the repository itself is applied")
			// The run's overlay, kept for the next run, is empty.
			overlays, _ := filepath.Glob(filepath.Join(sb.cfg.guard().OverlayRoot(), provision.WorkspaceKey(ws)+"-*", "upper", "*"))
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
	newRepo(t, ws)
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "src", "old"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "src", "a.txt"), []byte("a\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "src", "old", "x"), []byte("x\n"), 0o644))
	hostGit(t, ws, "add", ".")
	hostGit(t, ws, "commit", "-qm", "base")
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

// TestOverlayRecoveredAfterACrash: a worker killed while its command ran
// leaves the command's upper layer unapplied and the snapshot's file
// naming it; the next recovery checks the merged view, neutralises what
// was planted, applies the rest and removes the overlay.
func TestOverlayRecoveredAfterACrash(t *testing.T) {
	state := t.TempDir()
	cfg := Config{CacheDir: filepath.Join(state, "sandbox-cache")}
	ws := mustEval(t, t.TempDir())
	require.NoError(t, os.WriteFile(filepath.Join(ws, "kept"), []byte("old\n"), 0o644))
	before := hostguard.TakeSnapshot(ws, 0, true, nil)
	ov, err := cfg.guard().NewOverlay(ws)
	require.NoError(t, err)
	upper := filepath.Join(ov, "upper")
	// What the command had written into its upper layer: a new repository
	// with a planted fsmonitor, and a file.
	newRepo(t, filepath.Join(upper, "sub"))
	flag := filepath.Join(t.TempDir(), "FLAG")
	hostGit(t, filepath.Join(upper, "sub"), "config", "core.fsmonitor", "touch "+flag)
	require.NoError(t, os.WriteFile(filepath.Join(upper, "notes.txt"), []byte("made\n"), 0o644))
	// Its worker died: the snapshot's file names a process that is gone.
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	p := hostguard.PendingOf(before, ov)
	p.PID, p.Start = dead.Process.Pid, "1"
	require.NoError(t, os.MkdirAll(cfg.guard().PendingDir(), 0o700))
	data, err := json.Marshal(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(cfg.guard().PendingDir(), fmt.Sprintf("%s-%d-1-x.json", provision.WorkspaceKey(ws), p.PID)), data, 0o600))

	r := cfg.guard().RecoverInterrupted(ws)
	assert.Contains(t, fmt.Sprint(r.HostConfig), "sub/.git/config")
	assert.Contains(t, fmt.Sprint(r.HostConfig), "interrupted")
	b, err := os.ReadFile(filepath.Join(ws, "notes.txt"))
	require.NoError(t, err, "the interrupted command's file is applied")
	assert.Equal(t, "made\n", string(b))
	assert.False(t, hostGitRuns(t, flag, filepath.Join(ws, "sub"), "status"), "the planted fsmonitor runs after recovery")
	_, err = os.Stat(ov)
	assert.ErrorIs(t, err, os.ErrNotExist, "the overlay is left behind")
}

// TestOverlayFailsClosedWithoutTheView: when the check cannot run on the
// merged view, the upper layer's version-control parts are set aside, not
// applied, and the rest is applied.
func TestOverlayFailsClosedWithoutTheView(t *testing.T) {
	state := t.TempDir()
	cfg := Config{CacheDir: filepath.Join(state, "sandbox-cache")}
	ws := mustEval(t, t.TempDir())
	ov, err := cfg.guard().NewOverlay(ws)
	require.NoError(t, err)
	upper := filepath.Join(ov, "upper")
	newRepo(t, filepath.Join(upper, "lib", "sub"))
	require.NoError(t, os.WriteFile(filepath.Join(upper, "lib", "notes.txt"), []byte("made\n"), 0o644))
	old := hostguard.ViewChecker
	hostguard.ViewChecker = func(*hostguard.Guard) (hostguard.ViewResult, error) {
		return hostguard.ViewResult{}, errors.New("no namespaces here")
	}
	t.Cleanup(func() { hostguard.ViewChecker = old })
	g := &hostguard.Guard{Ws: ws, Before: hostguard.TakeSnapshot(ws, 0, true, nil), Qroot: cfg.guard().Quarantine(), Overlay: ov}
	var res hostguard.Report
	g.Finish(&res)
	require.Len(t, res.HostConfig, 1)
	assert.Equal(t, "lib/sub/.git", res.HostConfig[0].Path)
	assert.Contains(t, res.HostConfig[0].Action, "no namespaces here")
	_, err = os.Lstat(filepath.Join(ws, "lib", "sub", ".git"))
	assert.ErrorIs(t, err, os.ErrNotExist, "an unchecked repository was applied")
	_, err = os.Stat(filepath.Join(res.HostConfigKept, "lib", "sub", ".git", "HEAD"))
	assert.NoError(t, err, "the unchecked repository is not kept in the quarantine")
	b, err := os.ReadFile(filepath.Join(ws, "lib", "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "made\n", string(b))
	assert.True(t, strings.Contains(res.HostConfigNote(), "could not check"), res.HostConfigNote())
}

// TestOverlaySuspects: which upper layers need the check on the merged
// view, and which are applied at once. The workspace already has a
// repository (.git with its objects, refs, HEAD, hooks), src/hooks and a
// config directory; the upper layers are as overlayfs leaves them.
func TestOverlaySuspects(t *testing.T) {
	ws := mustEval(t, t.TempDir())
	for _, d := range []string{".git/objects/ab", ".git/refs/heads", ".git/hooks", "src/hooks", "config", "lib/.jj/repo", "old", "half/objects", "half/refs"} {
		require.NoError(t, os.MkdirAll(filepath.Join(ws, d), 0o755))
	}
	for _, f := range []string{".git/HEAD", ".git/config", "README"} {
		require.NoError(t, os.WriteFile(filepath.Join(ws, f), nil, 0o644))
	}
	require.NoError(t, os.Symlink(".git", filepath.Join(ws, "x")))
	before := &hostguard.Snapshot{HookDirs: map[string]bool{"tool/h": true, ".git/hooks": true}}
	tests := []struct {
		name   string
		files  []string
		opaque []string // upper directories marked opaque
		want   []string
	}{
		{"plain files", []string{"a.txt", "src/b.go", "build/out/x"}, nil, nil},
		{"a commit in the workspace's repository", []string{".git/objects/ab/cd", ".git/objects/ef/01", ".git/refs/heads/main", ".git/index", ".git/logs/HEAD", ".git/HEAD"}, nil, nil},
		{"src/hooks and a config directory", []string{"src/hooks/useX.ts", "config/app.yaml"}, nil, nil},
		{"the repository's config", []string{".git/config"}, nil, []string{".git/config"}},
		{"a hook of the repository", []string{".git/hooks/pre-commit"}, nil, []string{".git/hooks"}},
		{"a new repository", []string{"sub/.git/HEAD", "sub/x"}, nil, []string{"sub/.git"}},
		{"the repository replaced", []string{".git/HEAD"}, []string{".git"}, []string{".git"}},
		{"a directory replaced by a new repository's insides", []string{"old/objects/x"}, []string{"old"}, []string{"old/objects"}},
		{"case folded", []string{"x/.GIT/config"}, nil, []string{"x/.GIT"}},
		{"a bare repository's names", []string{"cache/evil/HEAD", "cache/evil/objects/x"}, nil, []string{"cache/evil/objects"}},
		{"HEAD made in a directory", []string{"src/HEAD"}, nil, nil},
		{"HEAD made beside objects and refs", []string{"half/HEAD"}, nil, []string{"half/HEAD"}},
		{"a .git pointer file", []string{"src/.git"}, nil, []string{"src/.git"}},
		{"mercurial and jj", []string{"a/.hg/hgrc", "b/.jj/repo/config.toml"}, nil, []string{"a/.hg", "b/.jj"}},
		{"jj's config in its directory", []string{"lib/.jj/repo/config.toml"}, nil, []string{"lib/.jj/repo/config.toml"}},
		{"config.toml elsewhere", []string{"Cargo/config.toml", "hugo/config.toml"}, nil, nil},
		{"a hooks directory core.hooksPath names", []string{"tool/h/pre-commit"}, nil, []string{"tool/h"}},
		// x was a symbolic link to the repository's .git, which the command
		// replaced by a directory of its own: nothing below it is merged.
		{"a repository where a link to one was", []string{"x/objects/y", "x/refs/heads/m", "x/HEAD", "x/hooks/post-checkout"}, []string{"x"}, []string{"x/objects", "x/refs", "x/hooks"}},
		{"below a link the command replaced, unmarked", []string{"x/objects/y"}, nil, []string{"x/objects"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			upper := t.TempDir()
			for _, f := range tc.files {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(upper, f)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(upper, f), nil, 0o644))
			}
			for _, d := range tc.opaque {
				require.NoError(t, unix.Setxattr(filepath.Join(upper, d), overlaymerge.OpaqueXattr, []byte("y"), 0))
			}
			g := &hostguard.Guard{Ws: ws, Before: before}
			assert.ElementsMatch(t, tc.want, g.Suspects(upper))
		})
	}
}

// TestOverlaySweptWithoutSnapshot: overlays of dead runs that no
// snapshot's file names are swept: an empty one (its worker died before
// the command began) is removed; a full one (its snapshot could not be
// kept) is applied with its version-control parts set aside.
func TestOverlaySweptWithoutSnapshot(t *testing.T) {
	state := t.TempDir()
	cfg := Config{CacheDir: filepath.Join(state, "sandbox-cache")}
	ws := mustEval(t, t.TempDir())
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	orphan := func(name string) string {
		dir := filepath.Join(cfg.guard().OverlayRoot(), fmt.Sprintf("%s-%d-1-%s", provision.WorkspaceKey(ws), dead.Process.Pid, name))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "upper"), 0o700))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "work"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "workspace"), []byte(ws), 0o600))
		return dir
	}
	empty, full := orphan("empty"), orphan("full")
	newRepo(t, filepath.Join(full, "upper", "sub"))
	require.NoError(t, os.WriteFile(filepath.Join(full, "upper", "notes.txt"), []byte("made\n"), 0o644))
	live, err := cfg.guard().NewOverlay(ws) // this process's: never swept
	require.NoError(t, err)

	r := cfg.guard().RecoverInterrupted(ws)
	require.Len(t, r.HostConfig, 1, "%v", r.HostConfig)
	assert.Equal(t, "sub/.git", r.HostConfig[0].Path)
	assert.Contains(t, r.HostConfig[0].Action, "interrupted")
	_, err = os.Lstat(filepath.Join(ws, "sub", ".git"))
	assert.ErrorIs(t, err, os.ErrNotExist, "an unchecked repository was applied")
	_, err = os.Stat(filepath.Join(ws, "sub", "README"))
	assert.NoError(t, err, "the rest of the directory is not applied")
	b, err := os.ReadFile(filepath.Join(ws, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "made\n", string(b))
	for _, gone := range []string{empty, full} {
		_, err := os.Stat(gone)
		assert.ErrorIs(t, err, os.ErrNotExist, gone)
	}
	_, err = os.Stat(live)
	assert.NoError(t, err, "a live run's overlay was swept")
}
