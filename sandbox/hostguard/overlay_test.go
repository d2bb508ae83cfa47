//go:build linux

package hostguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/custos-dev/custos/internal/gittest"
	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/overlaymerge"
)

// TestOverlayRecoveredAfterACrash: a worker killed while its command ran
// leaves the command's upper layer unapplied and the snapshot's file
// naming it; the next recovery checks the merged view, neutralises what
// was planted, applies the rest and removes the overlay.
func TestOverlayRecoveredAfterACrash(t *testing.T) {
	state := t.TempDir()
	cfg := Settings{CacheDir: filepath.Join(state, "sandbox-cache")}
	ws := realPath(t, t.TempDir())
	require.NoError(t, os.WriteFile(filepath.Join(ws, "kept"), []byte("old\n"), 0o644))
	before := takeSnapshot(ws, snapOpts{keep: true})
	ov, err := cfg.newOverlay(ws)
	require.NoError(t, err)
	upper := filepath.Join(ov, "upper")
	// What the command had written into its upper layer: a new repository
	// with a planted fsmonitor, and a file.
	gittest.NewRepo(t, filepath.Join(upper, "sub"))
	flag := filepath.Join(t.TempDir(), "FLAG")
	gittest.Run(t, filepath.Join(upper, "sub"), "config", "core.fsmonitor", "touch "+flag)
	require.NoError(t, os.WriteFile(filepath.Join(upper, "notes.txt"), []byte("made\n"), 0o644))
	// Its worker died: the snapshot's file names a process that is gone.
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	p := pendingOf(before, ov)
	p.PID, p.Start = dead.Process.Pid, "1"
	require.NoError(t, os.MkdirAll(cfg.pendingDir(), 0o700))
	data, err := json.Marshal(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(cfg.pendingDir(), fmt.Sprintf("%s-%d-1-x.json", hostfs.WorkspaceKey(ws), p.PID)), data, 0o600))

	r := cfg.recoverInterrupted(ws)
	assert.Contains(t, fmt.Sprint(r.HostConfig), "sub/.git/config")
	assert.Contains(t, fmt.Sprint(r.HostConfig), "interrupted")
	b, err := os.ReadFile(filepath.Join(ws, "notes.txt"))
	require.NoError(t, err, "the interrupted command's file is applied")
	assert.Equal(t, "made\n", string(b))
	assert.False(t, gittest.Runs(t, flag, filepath.Join(ws, "sub"), "status"), "the planted fsmonitor runs after recovery")
	_, err = os.Stat(ov)
	assert.ErrorIs(t, err, os.ErrNotExist, "the overlay is left behind")
}

// TestOverlayFailsClosedWithoutTheView: when the check cannot run on the
// merged view, the upper layer's version-control parts are set aside, not
// applied, and the rest is applied.
func TestOverlayFailsClosedWithoutTheView(t *testing.T) {
	state := t.TempDir()
	cfg := Settings{CacheDir: filepath.Join(state, "sandbox-cache")}
	ws := realPath(t, t.TempDir())
	ov, err := cfg.newOverlay(ws)
	require.NoError(t, err)
	upper := filepath.Join(ov, "upper")
	gittest.NewRepo(t, filepath.Join(upper, "lib", "sub"))
	require.NoError(t, os.WriteFile(filepath.Join(upper, "lib", "notes.txt"), []byte("made\n"), 0o644))
	old := viewChecker
	viewChecker = func(*Guard) (viewResult, error) {
		return viewResult{}, errors.New("no namespaces here")
	}
	t.Cleanup(func() { viewChecker = old })
	g := &Guard{ws: ws, before: takeSnapshot(ws, snapOpts{keep: true}), qroot: cfg.Quarantine(), overlay: ov}
	var res Report
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
	ws := realPath(t, t.TempDir())
	for _, d := range []string{".git/objects/ab", ".git/refs/heads", ".git/hooks", "src/hooks", "config", "lib/.jj/repo", "old", "half/objects", "half/refs"} {
		require.NoError(t, os.MkdirAll(filepath.Join(ws, d), 0o755))
	}
	for _, f := range []string{".git/HEAD", ".git/config", "README"} {
		require.NoError(t, os.WriteFile(filepath.Join(ws, f), nil, 0o644))
	}
	require.NoError(t, os.Symlink(".git", filepath.Join(ws, "x")))
	before := &hostSnapshot{hookDirs: map[string]bool{"tool/h": true, ".git/hooks": true}}
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
			g := &Guard{ws: ws, before: before}
			assert.ElementsMatch(t, tc.want, g.suspects(upper))
		})
	}
}

// TestOverlaySweptWithoutSnapshot: overlays of dead runs that no
// snapshot's file names are swept: an empty one (its worker died before
// the command began) is removed; a full one (its snapshot could not be
// kept) is applied with its version-control parts set aside.
func TestOverlaySweptWithoutSnapshot(t *testing.T) {
	state := t.TempDir()
	cfg := Settings{CacheDir: filepath.Join(state, "sandbox-cache")}
	ws := realPath(t, t.TempDir())
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	orphan := func(name string) string {
		dir := filepath.Join(cfg.OverlayRoot(), fmt.Sprintf("%s-%d-1-%s", hostfs.WorkspaceKey(ws), dead.Process.Pid, name))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "upper"), 0o700))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "work"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "workspace"), []byte(ws), 0o600))
		return dir
	}
	empty, full := orphan("empty"), orphan("full")
	gittest.NewRepo(t, filepath.Join(full, "upper", "sub"))
	require.NoError(t, os.WriteFile(filepath.Join(full, "upper", "notes.txt"), []byte("made\n"), 0o644))
	live, err := cfg.newOverlay(ws) // this process's: never swept
	require.NoError(t, err)

	r := cfg.recoverInterrupted(ws)
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

// TestMergeReportsWithheld: what the merge clears or leaves out reaches
// the result, and the model's note names it.
func TestMergeReportsWithheld(t *testing.T) {
	root := t.TempDir()
	upper, ws := filepath.Join(root, "upper"), filepath.Join(root, "ws")
	require.NoError(t, os.MkdirAll(upper, 0o755))
	require.NoError(t, os.MkdirAll(ws, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(upper, "tool"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, unix.Chmod(filepath.Join(upper, "tool"), 0o4755))
	require.NoError(t, unix.Mkfifo(filepath.Join(upper, "pipe"), 0o644))
	g := &Guard{ws: ws, qroot: filepath.Join(root, "q")}
	var res Report
	require.NoError(t, g.merge(upper, &res))
	fi, err := os.Lstat(filepath.Join(ws, "tool"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode(), "applied as a plain executable")
	_, err = os.Lstat(filepath.Join(ws, "pipe"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "the fifo is not applied")
	note := res.HostConfigNote()
	assert.Contains(t, note, "tool (set-uid or set-gid): applied without its set-uid and set-gid bits")
	assert.Contains(t, note, "pipe (fifo or socket): not applied")
}

// realPath is p with its symbolic links resolved (t.TempDir may be below one).
func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return r
}
