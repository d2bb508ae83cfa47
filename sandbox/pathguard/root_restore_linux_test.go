//go:build linux

package pathguard

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/internal/swaptest"
)

// What a checkpoint's rewind does besides reading and writing files
// (Mkdir, Symlink, Readlink, Chmod) acts on the name under the workspace;
// a directory on the way swapped for a link to another one makes each
// fail with ErrPathChanged, and the directory the link leads to is left
// exactly as it was.
func TestRootMkdirSymlinkReadlinkChmod(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		ws := swapWorkspace(t)
		root, err := OpenRoot(ws)
		require.NoError(t, err)
		defer root.Close()

		require.NoError(t, root.Mkdir(filepath.Join("a", "d"), 0o700))
		require.NoError(t, root.Chmod(filepath.Join("a", "d"), 0o750|fs.ModeSetgid))
		fi, err := os.Lstat(filepath.Join(ws, "a", "d"))
		require.NoError(t, err)
		require.True(t, fi.IsDir())
		require.Equal(t, 0o750|fs.ModeSetgid, fi.Mode()&(fs.ModePerm|fs.ModeSetgid))
		require.NoError(t, root.Symlink("../secret/f.txt", filepath.Join("a", "l")))
		target, err := root.Readlink(filepath.Join("a", "l"))
		require.NoError(t, err)
		require.Equal(t, "../secret/f.txt", target)
		require.ErrorIs(t, root.Chmod(filepath.Join("a", "l"), 0o600), ErrPathChanged, "a link's mode is never set: its target's would be")
		fi, err = os.Stat(filepath.Join(ws, "secret", "f.txt"))
		require.NoError(t, err)
		require.Equal(t, fs.FileMode(0o644), fi.Mode().Perm(), "the link's target untouched")

		swaptest.Dir(t, ws, "a", "secret")
		require.ErrorIs(t, root.Mkdir(filepath.Join("a", "new"), 0o755), ErrPathChanged)
		require.ErrorIs(t, root.Symlink("x", filepath.Join("a", "newlink")), ErrPathChanged)
		_, err = root.Readlink(filepath.Join("a", "l"))
		require.ErrorIs(t, err, ErrPathChanged)
		require.ErrorIs(t, root.Chmod(filepath.Join("a", "f.txt"), 0o777), ErrPathChanged)
		ents, err := os.ReadDir(filepath.Join(ws, "secret"))
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		require.Equal(t, []string{"f.txt", "g.txt"}, names, "nothing made through the link")
		fi, err = os.Stat(filepath.Join(ws, "secret", "f.txt"))
		require.NoError(t, err)
		require.Equal(t, fs.FileMode(0o644), fi.Mode().Perm(), "no mode set through the link")
	})
}
