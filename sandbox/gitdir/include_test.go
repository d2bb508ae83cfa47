package gitdir

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, path, s string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
}

func paths(incs []Include) []string {
	var out []string
	for _, in := range incs {
		out = append(out, in.Path)
	}
	return out
}

// Every include counts, whatever its condition, spelled as git reads it
// (case, quoting, the old [section.subsection] form), relative to the
// file that names it, ~/ from home; a cycle ends, and what git cannot
// place (%(prefix)/, an unknown user) is left out.
func TestClosureFollowsEveryInclude(t *testing.T) {
	d, home := t.TempDir(), t.TempDir()
	root := filepath.Join(d, "repo", ".git", "config")
	write(t, root, "[core]\n\tbare = false\n[Include]\n\tPath = ../a.cfg\n"+
		"[includeIf \"gitdir:/nowhere/\"]\n\tpath = \"/abs/b.cfg\"\n"+
		"[includeIf \"onbranch:x\"]\n\tpath = ~/h.cfg\n"+
		"[includeIf \"hasconfig:remote.*.url:https://x.invalid/**\"]\n\tpath = %(prefix)/etc/p.cfg\n"+
		"[include]\n\tpath = ~nosuchuser-custos/u.cfg\n\tpath = \"sp ace\\\\q.cfg\"\n")
	write(t, filepath.Join(d, "repo", "a.cfg"), "[include]\n\tpath = sub/c.cfg\n")
	write(t, filepath.Join(d, "repo", "sub", "c.cfg"), "[include]\n\tpath = ../a.cfg\n\tpath = ../../repo/sub/c.cfg\n")
	incs, err := Closure([]string{root}, home)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		filepath.Join(d, "repo", "a.cfg"), "/abs/b.cfg", filepath.Join(home, "h.cfg"),
		filepath.Join(d, "repo", ".git", `sp ace\q.cfg`), filepath.Join(d, "repo", "sub", "c.cfg"),
	}, paths(incs))
}

// Symbolic links are resolved as the kernel would, including a missing
// rest and a relative link, and each link met is named.
func TestClosureResolvesLinks(t *testing.T) {
	d := t.TempDir()
	write(t, filepath.Join(d, "real", "x.cfg"), "")
	require.NoError(t, os.Symlink("real", filepath.Join(d, "dir")))
	require.NoError(t, os.Symlink("dir/x.cfg", filepath.Join(d, "l1")))
	root := filepath.Join(d, "config")
	write(t, root, "[include]\n\tpath = l1\n\tpath = dir/missing/y.cfg\n")
	incs, err := Closure([]string{root}, "")
	require.NoError(t, err)
	require.Len(t, incs, 2)
	assert.Equal(t, filepath.Join(d, "real", "x.cfg"), incs[0].Real)
	assert.Equal(t, []string{filepath.Join(d, "l1"), filepath.Join(d, "dir")}, incs[0].Links)
	assert.Equal(t, filepath.Join(d, "real", "missing", "y.cfg"), incs[1].Real)
	assert.Equal(t, []string{filepath.Join(d, "dir")}, incs[1].Links)
}

// Fail closed: a config that names includes git cannot read is an error;
// one with no include is never handed to git; a FIFO is not read.
func TestClosureFailsClosed(t *testing.T) {
	d := t.TempDir()
	bad := filepath.Join(d, "bad")
	write(t, bad, "[include\n\tpath = x\n")
	_, err := Closure([]string{bad}, "")
	assert.True(t, errors.Is(err, ErrIncludes), "%v", err)

	plain := filepath.Join(d, "plain")
	write(t, plain, "[core\n\tbroken but no directive\n")
	incs, err := Closure([]string{plain}, "")
	assert.NoError(t, err)
	assert.Empty(t, incs)

	fifo := filepath.Join(d, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	incs, err = Closure([]string{fifo}, "")
	assert.NoError(t, err)
	assert.Empty(t, incs)
}

// Every core.hooksPath of the config and the files it includes names a
// hooks directory.
func TestHooksDirsOfIncludes(t *testing.T) {
	d := t.TempDir()
	gd := filepath.Join(d, ".git")
	write(t, filepath.Join(gd, "config"), "[core]\n\thooksPath = own\n[include]\n\tpath = ../h.cfg\n")
	write(t, filepath.Join(d, "h.cfg"), "[core]\n\thooksPath = included\n")
	dirs, err := HooksDirsOf(gd, d, "")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{filepath.Join(d, "own"), filepath.Join(d, "included")}, dirs)
	assert.Equal(t, filepath.Join(d, "own"), HooksDirOf(gd, d), "the repository's own value, as before")
}
