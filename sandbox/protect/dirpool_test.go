package protect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	return fi.Sys().(*syscall.Stat_t).Ino
}

// A placeholder directory goes back into the pool after the run and is the
// one the next run takes; what is not an empty directory is never taken
// away, and nothing at a placeholder's place is ever replaced.
func TestDirPool(t *testing.T) {
	cache, ws := t.TempDir(), t.TempDir()
	at := func(n string) string { return filepath.Join(ws, n) }

	p := OpenDirPool(cache)
	require.NoError(t, p.take(at(".vscode")), "an empty pool makes the directory")
	first := inode(t, at(".vscode"))
	p.give(at(".vscode"))
	assert.NoDirExists(t, at(".vscode"))

	p = OpenDirPool(cache)
	require.Len(t, p.names, 1)
	require.NoError(t, p.take(at(".idea")))
	assert.Equal(t, first, inode(t, at(".idea")), "the pooled directory is renamed into place")
	assert.True(t, hostfs.EmptyDir(at(".idea")))

	// Written into during the run (by a host process): it stays.
	require.NoError(t, os.WriteFile(at(".idea/workspace.xml"), []byte("x"), 0o644))
	p.give(at(".idea"))
	assert.FileExists(t, at(".idea/workspace.xml"))

	// A file or a link at the place is left alone, and take reports it
	// exists without replacing it.
	require.NoError(t, os.WriteFile(at(".mcp.json"), []byte("{}"), 0o644))
	require.NoError(t, os.Symlink(t.TempDir(), at(".zed")))
	p = OpenDirPool(cache)
	require.NoError(t, p.take(at(".custos")))
	p.give(at(".custos"))
	p = OpenDirPool(cache)
	require.Len(t, p.names, 1)
	err := p.take(at(".mcp.json"))
	assert.True(t, errors.Is(err, fs.ErrExist), "%v", err)
	b, _ := os.ReadFile(at(".mcp.json"))
	assert.Equal(t, "{}", string(b))
	assert.Len(t, p.names, 0, "the entry it tried is not offered again this run")
	p.give(at(".mcp.json"))
	p.give(at(".zed"))
	assert.FileExists(t, at(".mcp.json"))
	fi, err := os.Lstat(at(".zed"))
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink)
	pooled, err := os.ReadDir(filepath.Join(cache, "placeholders"))
	require.NoError(t, err)
	assert.Len(t, pooled, 1, "neither the file nor the link stays in the pool")

	// No pool: mkdir and rmdir.
	none := OpenDirPool("")
	require.NoError(t, none.take(at(".git")))
	none.give(at(".git"))
	assert.NoDirExists(t, at(".git"))
}

// A pool on another mount than the workspace cannot rename: the run falls
// back to mkdir and rmdir, and the pool is left as it was.
func TestDirPoolOnAnotherMount(t *testing.T) {
	shm := "/dev/shm"
	var st1, st2 syscall.Stat_t
	ws := t.TempDir()
	if syscall.Stat(shm, &st1) != nil || syscall.Stat(ws, &st2) != nil || st1.Dev == st2.Dev {
		t.Skip("needs /dev/shm on another file system than the test's temporary directory")
	}
	cache, err := os.MkdirTemp(shm, "custos-pool-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(cache) })
	require.NoError(t, os.MkdirAll(filepath.Join(cache, "placeholders", pooledPrefix+"x"), 0o700))

	p := OpenDirPool(cache)
	require.NoError(t, p.take(filepath.Join(ws, ".vscode")))
	assert.DirExists(t, filepath.Join(ws, ".vscode"))
	assert.DirExists(t, filepath.Join(cache, "placeholders", pooledPrefix+"x"), "the pool's entry stays")
	p.give(filepath.Join(ws, ".vscode"))
	assert.NoDirExists(t, filepath.Join(ws, ".vscode"))
}

// The pool keeps at most dirPoolMax directories; past that they are
// removed.
func TestDirPoolBounded(t *testing.T) {
	cache, ws := t.TempDir(), t.TempDir()
	p := OpenDirPool(cache)
	n := dirPoolMax + 5
	for i := range n {
		require.NoError(t, p.take(filepath.Join(ws, fmt.Sprint(i))))
	}
	for i := range n {
		p.give(filepath.Join(ws, fmt.Sprint(i)))
	}
	ents, err := os.ReadDir(filepath.Join(cache, "placeholders"))
	require.NoError(t, err)
	assert.Len(t, ents, dirPoolMax)
	left, err := os.ReadDir(ws)
	require.NoError(t, err)
	assert.Empty(t, left)
}
