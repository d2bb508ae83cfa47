//go:build linux

package checkpoint

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/internal/swaptest"

	"github.com/custos-dev/custos/sandbox/pathguard"
)

const secretText = "TOPSECRET-checkpoint-must-not-keep"

// swapWS is a canonical workspace with dir/sub/f.txt, the file a tool
// was allowed to change, and denied/sub/f.txt, a Read-denied file with
// the same name under another directory.
func swapWS(t *testing.T) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	mkfile(t, ws, "dir/sub/f.txt", "ordinary\n")
	mkfile(t, ws, "denied/sub/f.txt", secretText+"\n")
	return ws
}

func mkfile(t *testing.T, ws, rel, data string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, rel), []byte(data), 0o644))
}

// requireNoSecret fails if any file of the store (objects, records, a
// stage's links) holds the secret.
func requireNoSecret(t *testing.T, store string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NotContains(t, string(data), secretText, "the denied file's content is in the checkpoint store at %s", p)
		return nil
	}))
}

// The attack on a Write or Edit: the guard checked dir/sub/f.txt, then a
// sandboxed process swapped dir for a link to denied before the
// checkpoint saved the file's current content. The step fails with
// ErrPathChanged and the store never holds the denied file, so no rewind
// can put it into an ordinary file.
func TestRecordingRefusesADirectorySwappedForALink(t *testing.T) {
	steps := map[string]func(r *Recording) error{
		"Before":     func(r *Recording) error { return r.Before("dir/sub/f.txt") },
		"BeforeTree": func(r *Recording) error { return r.BeforeTree("dir/sub") },
	}
	for name, step := range steps {
		t.Run(name, func(t *testing.T) {
			ws, s := swapWS(t), Store{Dir: t.TempDir()}
			r, err := s.Start(Call{Job: "j", Turn: 1, Call: "c", Tool: "Write"}, ws)
			require.NoError(t, err)
			defer r.Close()
			swaptest.Dir(t, ws, "dir", "denied")
			err = step(r)
			require.ErrorIs(t, err, pathguard.ErrPathChanged)
			requireNoSecret(t, s.Dir)
			require.NoError(t, r.Commit())
			requireNoSecret(t, s.Dir)
		})
	}
}

// The same race on a Bash command's (or a writing MCP server's) overlay:
// the walk of the upper layer saw dir/sub as the workspace's directory,
// then dir became a link to denied before the workspace's side of
// dir/sub's files was read (staged: hard-linked into the record's stage).
// The step fails, so the merge is refused, and neither the stage nor the
// objects hold the denied file.
func TestUpperRecordingRefusesADirectorySwappedForALink(t *testing.T) {
	ws, s := swapWS(t), Store{Dir: t.TempDir()}
	upper := t.TempDir()
	mkfile(t, upper, "dir/sub/f.txt", "written by the command\n")
	r, err := s.Start(Call{Job: "j", Turn: 1, Call: "c", Tool: "Bash"}, ws)
	require.NoError(t, err)
	defer r.Close()
	up, err := pathguard.OpenRoot(upper)
	require.NoError(t, err)
	defer up.Close()
	r.startStage()
	require.GreaterOrEqual(t, r.stageFd, 0, "the store stages")

	swaptest.Dir(t, ws, "dir", "denied")
	err = r.upperDir(up, "dir/sub", true)
	require.ErrorIs(t, err, pathguard.ErrPathChanged)
	requireNoSecret(t, s.Dir)
	for _, c := range r.rec.Changes {
		require.NotEqual(t, File, c.Before.Kind, "%s: no workspace side was read", c.Path)
	}
}

// The rewind's side: the job wrote dir/pre-commit; then someone swapped
// dir for a link to .git/hooks (or to the Read-denied directory). Whether
// the swap lands before the plan (a conflict, forced) or between the plan
// and the rewind, the rewind writes nothing through the link: the path
// is named in Failed, no hook appears, the denied file is unchanged.
func TestRewindWritesNothingThroughASwappedLink(t *testing.T) {
	for _, tc := range []struct {
		name, target string
		beforePlan   bool
	}{
		{"to .git/hooks, after the plan", ".git/hooks", false},
		{"to .git/hooks, before the plan", ".git/hooks", true},
		{"to the denied directory, after the plan", "denied", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, s := swapWS(t), Store{Dir: t.TempDir()}
			require.NoError(t, os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755))
			mkfile(t, ws, "denied/pre-commit", secretText)
			mkfile(t, ws, "dir/pre-commit", "#!/bin/sh\necho before\n")
			require.NoError(t, os.Chmod(filepath.Join(ws, "dir", "pre-commit"), 0o755))
			record(t, s, ws, "j", 1, "dir/pre-commit", "#!/bin/sh\necho job\n", true)

			if tc.beforePlan {
				swaptest.Dir(t, ws, "dir", tc.target)
			}
			p, err := s.PlanRewind("j", ws, 0)
			require.NoError(t, err)
			force := false
			if tc.beforePlan {
				require.Len(t, p.Conflicts, 1, "a link where the job left a file: the file is not there")
				require.Equal(t, Absent, p.Conflicts[0].Now.Kind)
				force = true
			} else {
				require.Empty(t, p.Conflicts)
				swaptest.Dir(t, ws, "dir", tc.target)
			}
			out, err := s.ApplyRewind(ws, p, force)
			require.NoError(t, err)
			require.Zero(t, out.Restored)
			require.Len(t, out.Failed, 1)
			require.Contains(t, out.Failed[0], "dir/pre-commit")
			require.Contains(t, out.Failed[0], pathguard.ErrPathChanged.Error())

			_, err = os.Lstat(filepath.Join(ws, ".git", "hooks", "pre-commit"))
			require.ErrorIs(t, err, fs.ErrNotExist, "no hook written through the link")
			data, err := os.ReadFile(filepath.Join(ws, "denied", "pre-commit"))
			require.NoError(t, err)
			require.Equal(t, secretText, string(data), "nothing written through the link")
			for _, d := range []string{filepath.Join(ws, ".git", "hooks"), filepath.Join(ws, "denied")} {
				ents, err := os.ReadDir(d)
				require.NoError(t, err)
				for _, e := range ents {
					require.False(t, strings.HasPrefix(e.Name(), ".custos-rewind-"), "no temporary file left through the link in %s", d)
				}
			}
		})
	}
}

// A command of the job replaced the directory dir with a link to another
// directory: the rewind sees no conflict under the link (it does not look
// through it), removes the link, makes the directory again and puts the
// file back in it; the directory the link led to is untouched.
func TestRewindPastALinkTheJobLeftWhereADirectoryWas(t *testing.T) {
	ws, s := swapWS(t), Store{Dir: t.TempDir()}
	mkfile(t, ws, "elsewhere/sub/f.txt", "someone else's\n")
	record(t, s, ws, "j", 1, "dir/sub/f.txt", "job\n", true)

	r, err := s.Start(Call{Job: "j", Turn: 2, Call: "c2", Tool: "Bash"}, ws)
	require.NoError(t, err)
	require.NoError(t, r.BeforeTree("dir"))
	r.After("dir", Entry{Kind: Symlink, Target: "elsewhere"})
	require.NoError(t, r.Commit())
	require.NoError(t, os.RemoveAll(filepath.Join(ws, "dir")))
	require.NoError(t, os.Symlink("elsewhere", filepath.Join(ws, "dir")))
	require.NoError(t, r.Done())
	r.Close()

	p, err := s.PlanRewind("j", ws, 0)
	require.NoError(t, err)
	require.Empty(t, p.Conflicts)
	out, err := s.ApplyRewind(ws, p, false)
	require.NoError(t, err)
	require.Empty(t, out.Failed)
	fi, err := os.Lstat(filepath.Join(ws, "dir"))
	require.NoError(t, err)
	require.True(t, fi.IsDir(), "the directory is back, the link gone")
	data, err := os.ReadFile(filepath.Join(ws, "dir", "sub", "f.txt"))
	require.NoError(t, err)
	require.Equal(t, "ordinary\n", string(data))
	data, err = os.ReadFile(filepath.Join(ws, "elsewhere", "sub", "f.txt"))
	require.NoError(t, err)
	require.Equal(t, "someone else's\n", string(data), "the link's target untouched")
}

// A record keeps the workspace's git HEAD, read from .git's files, links
// followed (a worktree's .git names its directory anywhere). A command
// that made HEAD, or the ref it names, a link to the denied file does not
// get that file into the record as the "commit": only an object name is
// kept.
func TestRecordHeadIsOnlyAnObjectName(t *testing.T) {
	const sum = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name  string
		files map[string]string
		links map[string]string // name -> target
		want  string
	}{
		{name: "a branch", files: map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/refs/heads/main": sum + "\n"}, want: sum},
		{name: "detached", files: map[string]string{".git/HEAD": sum + "\n"}, want: sum},
		{name: "HEAD a link to the denied file", links: map[string]string{".git/HEAD": "../denied/sub/f.txt"}},
		{name: "the ref a link to the denied file", files: map[string]string{".git/HEAD": "ref: refs/heads/main\n"},
			links: map[string]string{".git/refs/heads/main": "../../../denied/sub/f.txt"}},
		{name: "the ref climbing to the denied file", files: map[string]string{".git/HEAD": "ref: ../denied/sub/f.txt\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, s := swapWS(t), Store{Dir: t.TempDir()}
			require.NoError(t, os.MkdirAll(filepath.Join(ws, ".git", "refs", "heads"), 0o755))
			for name, data := range tc.files {
				mkfile(t, ws, name, data)
			}
			for name, target := range tc.links {
				require.NoError(t, os.Symlink(target, filepath.Join(ws, name)))
			}
			record(t, s, ws, "j", 1, "dir/sub/f.txt", "job\n", true)
			recs, err := s.Records("j")
			require.NoError(t, err)
			require.Len(t, recs, 1)
			require.Equal(t, tc.want, recs[0].Head)
			requireNoSecret(t, s.Dir)
		})
	}
}
