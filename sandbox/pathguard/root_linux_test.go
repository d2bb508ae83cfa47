//go:build linux

package pathguard

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/internal/swaptest"
)

const secretText = "TOPSECRET-do-not-show"

// swapWorkspace is a workspace with a/f.txt, a harmless file, and
// secret/f.txt, the file the swap leads to.
func swapWorkspace(t *testing.T) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for name, text := range map[string]string{"a/f.txt": "harmless\n", "secret/f.txt": secretText + "\n", "secret/g.txt": secretText} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644))
	}
	return ws
}

// bothWays runs f with openat2 and with the O_NOFOLLOW walk (the fallback
// for kernels without openat2).
func bothWays(t *testing.T, f func(t *testing.T)) {
	require.True(t, haveOpenat2(), "this kernel has openat2 (5.6+); the test needs it to test it")
	for _, walk := range []bool{false, true} {
		name := map[bool]string{false: "openat2", true: "walk"}[walk]
		t.Run(name, func(t *testing.T) {
			forceWalk = walk
			t.Cleanup(func() { forceWalk = false })
			f(t)
		})
	}
}

// The attack: the guard resolved a/f.txt (no link on it); then a sandboxed
// command swaps the directory a for a link to secret. Every way of reading
// the checked name fails with ErrPathChanged; the secret never comes back.
func TestRootRefusesADirectorySwappedForALink(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		ws := swapWorkspace(t)
		canon, err := Resolve(ws, "a/f.txt", false)
		require.NoError(t, err)
		require.Equal(t, filepath.Join(ws, "a", "f.txt"), canon, "checked: the harmless file")
		root, err := OpenRoot(ws)
		require.NoError(t, err)
		defer root.Close()
		swaptest.Dir(t, ws, "a", "secret")

		// Through os.Root the same name reads the secret: the hole.
		osRoot, err := os.OpenRoot(ws)
		require.NoError(t, err)
		leaked, err := osRoot.ReadFile("a/f.txt")
		_ = osRoot.Close()
		require.NoError(t, err)
		require.Contains(t, string(leaked), secretText, "the attack reaches the secret through os.Root")

		rel := filepath.Join("a", "f.txt")
		data, err := root.ReadFile(rel)
		require.ErrorIs(t, err, ErrPathChanged)
		require.NotContains(t, string(data), secretText)
		require.Contains(t, err.Error(), "try again")
		f, err := root.Open(rel)
		require.ErrorIs(t, err, ErrPathChanged)
		require.Nil(t, f)
		_, err = root.Stat(rel)
		require.ErrorIs(t, err, ErrPathChanged)
		_, err = root.Lstat(rel)
		require.ErrorIs(t, err, ErrPathChanged)
		entries, err := root.ReadDir("a")
		require.ErrorIs(t, err, ErrPathChanged, "the listing of a follows no link")
		require.Empty(t, entries)
	})
}

// The file itself swapped for a link to the secret: Open and Stat refuse
// it, Lstat shows the link (what Write's check looks at).
func TestRootRefusesAFileSwappedForALink(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		ws := swapWorkspace(t)
		root, err := OpenRoot(ws)
		require.NoError(t, err)
		defer root.Close()
		require.NoError(t, os.Remove(filepath.Join(ws, "a", "f.txt")))
		require.NoError(t, os.Symlink("../secret/f.txt", filepath.Join(ws, "a", "f.txt")))
		data, err := root.ReadFile("a/f.txt")
		require.ErrorIs(t, err, ErrPathChanged)
		require.NotContains(t, string(data), secretText)
		_, err = root.Stat("a/f.txt")
		require.ErrorIs(t, err, ErrPathChanged)
		fi, err := root.Lstat("a/f.txt")
		require.NoError(t, err)
		require.Equal(t, fs.ModeSymlink, fi.Mode().Type())
	})
}

// Writing through a swapped directory: creating, making directories,
// renaming into it and removing from it all refuse the link, and the
// protected file it leads to is unchanged.
func TestRootWritesNothingThroughASwappedLink(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		ws := swapWorkspace(t)
		hook := filepath.Join(ws, ".git", "hooks", "pre-commit")
		require.NoError(t, os.MkdirAll(filepath.Dir(hook), 0o755))
		require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\nexit 0\n"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws, "a", "pre-commit"), []byte("x"), 0o644))
		root, err := OpenRoot(ws)
		require.NoError(t, err)
		defer root.Close()
		require.NoError(t, os.WriteFile(filepath.Join(ws, "tmp"), []byte("evil"), 0o644))
		swaptest.Dir(t, ws, "a", ".git/hooks")

		_, err = root.OpenFile("a/pre-commit", os.O_WRONLY|os.O_TRUNC, 0)
		require.ErrorIs(t, err, ErrPathChanged)
		_, err = root.OpenFile("a/post-checkout", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
		require.ErrorIs(t, err, ErrPathChanged)
		require.ErrorIs(t, root.Rename("tmp", "a/pre-commit"), ErrPathChanged)
		require.ErrorIs(t, root.MkdirAll("a/sub", 0o755), ErrPathChanged)
		require.ErrorIs(t, root.Remove("a/pre-commit"), ErrPathChanged)

		got, err := os.ReadFile(hook)
		require.NoError(t, err)
		require.Equal(t, "#!/bin/sh\nexit 0\n", string(got), "the hook is unchanged")
		names, err := os.ReadDir(filepath.Dir(hook))
		require.NoError(t, err)
		require.Len(t, names, 1, "nothing was created beside the hook")
	})
}

// Without a swap, the root does what os.Root does.
func TestRootReadsWritesAndLists(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		ws := swapWorkspace(t)
		root, err := OpenRoot(ws)
		require.NoError(t, err)
		defer root.Close()
		require.NoError(t, root.MkdirAll(filepath.Join("new", "deep"), 0o755))
		f, err := root.OpenFile("new/deep/x.tmp", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		require.NoError(t, err)
		_, err = io.WriteString(f, "hello")
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.NoError(t, root.Rename("new/deep/x.tmp", "new/deep/x"))
		data, err := root.ReadFile("new/deep/x")
		require.NoError(t, err)
		require.Equal(t, "hello", string(data))
		fi, err := root.Stat("new/deep/x")
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		fi, err = root.Stat(".")
		require.NoError(t, err)
		require.True(t, fi.IsDir())
		entries, err := root.ReadDir(".")
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		require.Equal(t, []string{"a", "new", "secret"}, names)
		require.NoError(t, root.Remove("new/deep/x"))
		require.NoError(t, root.Remove("new/deep"))
		_, err = root.Lstat("new/deep")
		require.True(t, errors.Is(err, fs.ErrNotExist), "removed: %v", err)
		_, err = root.Open("../etc/passwd")
		require.ErrorIs(t, err, ErrOutsideWorkspace)
		_, err = root.Open("/etc/passwd")
		require.ErrorIs(t, err, ErrOutsideWorkspace)
		require.False(t, strings.Contains(root.Name(), ".."))
	})
}

// ReadDir's information (fstatat on the listed directory) is os.Lstat's,
// Sys included: a *syscall.Stat_t whose Nlink shows a hard link, which the
// file tools' hard-link check reads (another type would pass it by).
func TestRootReadDirInfoIsLstats(t *testing.T) {
	ws := swapWorkspace(t)
	require.NoError(t, os.Symlink("secret/f.txt", filepath.Join(ws, "link")))
	require.NoError(t, os.Link(filepath.Join(ws, "secret", "f.txt"), filepath.Join(ws, "hard")))
	require.NoError(t, os.Chmod(filepath.Join(ws, "secret", "g.txt"), 0o4750))
	root, err := OpenRoot(ws)
	require.NoError(t, err)
	defer root.Close()
	for _, dir := range []string{".", "secret"} {
		entries, err := root.ReadDir(dir)
		require.NoError(t, err)
		require.NotEmpty(t, entries)
		for _, e := range entries {
			got, err := e.Info()
			require.NoError(t, err)
			want, err := os.Lstat(filepath.Join(ws, dir, e.Name()))
			require.NoError(t, err)
			require.Equal(t, want.Mode(), got.Mode(), e.Name())
			require.Equal(t, want.Size(), got.Size(), e.Name())
			require.True(t, want.ModTime().Equal(got.ModTime()), e.Name())
			require.Equal(t, want.IsDir(), e.IsDir(), e.Name())
			require.Equal(t, want.Mode().Type(), e.Type(), e.Name())
			st, ok := got.Sys().(*syscall.Stat_t)
			require.True(t, ok, "%s: Sys is %T, not *syscall.Stat_t", e.Name(), got.Sys())
			require.Equal(t, want.Sys(), st, e.Name())
			if e.Name() == "hard" {
				require.EqualValues(t, 2, st.Nlink)
			}
		}
	}
}

// Stat answers what os.Stat does for the same file (its own fstat, no
// os.File made): name, size, mode, time and the *syscall.Stat_t, for a
// file, a directory and the workspace itself.
func TestRootStatIsOsStat(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "d"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "d", "f.txt"), []byte("hello\n"), 0o640))
	root, err := OpenRoot(ws)
	require.NoError(t, err)
	defer root.Close()
	for _, rel := range []string{"d/f.txt", "d", "."} {
		got, err := root.Stat(rel)
		require.NoError(t, err)
		want, err := os.Stat(filepath.Join(ws, rel))
		require.NoError(t, err)
		require.Equal(t, want.Name(), got.Name(), rel)
		require.Equal(t, want.Size(), got.Size(), rel)
		require.Equal(t, want.Mode(), got.Mode(), rel)
		require.True(t, want.ModTime().Equal(got.ModTime()), rel)
		require.Equal(t, want.Sys(), got.Sys(), rel)
	}
	_, err = root.Stat("d/missing")
	require.ErrorIs(t, err, fs.ErrNotExist)
}
