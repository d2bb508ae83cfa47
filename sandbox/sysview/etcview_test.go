package sysview

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/sandbox/mount"
)

// fakeEtc is an /etc of allowed entries: a file, a directory tree with a
// link, a private directory and a private file, one linked directory, and
// a directory holding a FIFO, which cannot be copied.
func fakeEtc(t *testing.T) (etc string, ms []mount.Mount, infos map[string]fs.FileInfo) {
	etc = t.TempDir()
	write := func(rel, data string, perm fs.FileMode) {
		p := filepath.Join(etc, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), perm))
		require.NoError(t, os.Chmod(p, perm))
	}
	write("hosts", "127.0.0.1 localhost\n", 0o644)
	write("ssl/certs/a.pem", "CERT A\n", 0o644)
	require.NoError(t, os.Symlink("a.pem", filepath.Join(etc, "ssl/certs/b.0")))
	write("ssl/private/key.pem", "SECRET KEY\n", 0o600)
	require.NoError(t, os.Chmod(filepath.Join(etc, "ssl/private"), 0o700))
	write("ssl/own.cnf", "owner only\n", 0o600)
	write("real-python3/conf", "py\n", 0o644)
	require.NoError(t, os.Symlink("real-python3", filepath.Join(etc, "python3")))
	require.NoError(t, os.MkdirAll(filepath.Join(etc, "weird"), 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(etc, "weird", "fifo"), 0o644))
	infos = map[string]fs.FileInfo{}
	for _, n := range []string{"hosts", "ssl", "python3", "weird"} {
		p := filepath.Join(etc, n)
		fi, err := os.Stat(p)
		require.NoError(t, err)
		dst := "/etc/" + n
		ms = append(ms, mount.Mount{Kind: mount.ROBind, Src: p, Dst: dst})
		infos[dst] = fi
	}
	return etc, ms, infos
}

func TestEtcViewCopiesDirectories(t *testing.T) {
	etc, ms, infos := fakeEtc(t)
	var c etcViewCache
	base := filepath.Join(t.TempDir(), "views")
	folded, dir, err := c.fold(base, ms, infos)
	require.NoError(t, err)
	assert.Equal(t, []mount.Mount{
		{Kind: mount.ROBind, Src: dir, Dst: "/etc"},
		{Kind: mount.ROBind, Src: filepath.Join(etc, "weird"), Dst: "/etc/weird"},
	}, folded, "only the directory that cannot be copied is still bound")

	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		require.NoError(t, err, rel)
		return string(b)
	}
	assert.Equal(t, "127.0.0.1 localhost\n", read("hosts"))
	assert.Equal(t, "CERT A\n", read("ssl/certs/a.pem"))
	link, err := os.Readlink(filepath.Join(dir, "ssl/certs/b.0"))
	require.NoError(t, err)
	assert.Equal(t, "a.pem", link, "links stay links")
	assert.Equal(t, "py\n", read("python3/conf"), "a linked directory is copied from where it leads")
	ents, err := os.ReadDir(filepath.Join(dir, "ssl/private"))
	require.NoError(t, err)
	assert.Empty(t, ents, "a private directory is kept, empty")
	assert.NoFileExists(t, filepath.Join(dir, "ssl/own.cnf"), "an owner-only file is left out")
	fi, err := os.Stat(filepath.Join(dir, "weird"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir(), "the bound directory's mount point")
	fi, err = os.Stat(filepath.Join(dir, "ssl/certs"))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o755), fi.Mode().Perm())
	assert.Empty(t, privateEtcMasks(folded), "nothing left to mask in what is still bound")

	// Unchanged: the same view. A file rewritten in place, even with its
	// old size and modification time: a new one, with the new content.
	_, again, err := c.fold(base, ms, infos)
	require.NoError(t, err)
	assert.Equal(t, dir, again)
	pem := filepath.Join(etc, "ssl/certs/a.pem")
	old, err := os.Stat(pem)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(pem, []byte("CERT B\n"), 0o644))
	require.NoError(t, os.Chtimes(pem, time.Now(), old.ModTime()))
	_, changed, err := c.fold(base, ms, infos)
	require.NoError(t, err)
	assert.NotEqual(t, dir, changed)
	b, err := os.ReadFile(filepath.Join(changed, "ssl/certs/a.pem"))
	require.NoError(t, err)
	assert.Equal(t, "CERT B\n", string(b))

	// A link added (its directory changed): a new view that has it.
	require.NoError(t, os.Symlink("a.pem", filepath.Join(etc, "ssl/certs/c.0")))
	_, added, err := c.fold(base, ms, infos)
	require.NoError(t, err)
	assert.NotEqual(t, changed, added)
	link, err = os.Readlink(filepath.Join(added, "ssl/certs/c.0"))
	require.NoError(t, err)
	assert.Equal(t, "a.pem", link)
}

func TestEtcTreeUnfit(t *testing.T) {
	dir := t.TempDir()
	for range etcTreeMaxDepth + 1 {
		dir = filepath.Join(dir, "d")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	_, err := walkEtcTree(filepath.Dir(filepath.Dir(dir)))
	assert.NoError(t, err, "within the depth")
	root := dir
	for range etcTreeMaxDepth + 1 {
		root = filepath.Dir(root)
	}
	_, err = walkEtcTree(root)
	assert.ErrorIs(t, err, errEtcTreeUnfit, "too deep")
	big := t.TempDir()
	for i := range etcTreeMax + 1 {
		require.NoError(t, os.WriteFile(filepath.Join(big, "f"+strconv.Itoa(i)), nil, 0o644))
	}
	_, err = walkEtcTree(big)
	assert.ErrorIs(t, err, errEtcTreeUnfit, "too many entries")
}
