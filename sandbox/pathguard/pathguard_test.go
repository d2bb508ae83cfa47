package pathguard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/protected"
	"github.com/custos-dev/custos/sandbox/hostfs"
)

// guardFixture builds a workspace with the symlinks the guard must see
// through, next to an "outside" directory it must never resolve into.
func guardFixture(t *testing.T) (ws, canonWS, outside string) {
	t.Helper()
	ws = t.TempDir()
	outside = t.TempDir()
	var err error
	canonWS, err = filepath.EvalSymlinks(ws)
	require.NoError(t, err)

	mk := func(rel string) {
		require.NoError(t, os.MkdirAll(filepath.Join(ws, rel), 0o755))
	}
	write := func(rel string) {
		require.NoError(t, os.WriteFile(filepath.Join(ws, rel), []byte("x"), 0o644))
	}
	link := func(target, rel string) {
		require.NoError(t, os.Symlink(target, filepath.Join(ws, rel)))
	}
	mk("sub")
	mk(".git/hooks")
	mk(".custos")
	write("sub/f.txt")
	write("README.md")
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644))

	link("/etc", "etc")                                 // symlink to a system dir
	link(outside, "outdir")                             // symlinked parent dir pointing out
	link(filepath.Join(outside, "nothing-yet"), "dang") // dangling, pointing out
	link("sub", "insub")                                // relative, stays inside
	link("../"+filepath.Base(outside), "relout")        // relative, climbs out
	link("sub/missing.txt", "danginside")               // dangling, stays inside
	link(".git/hooks", "hooks")                         // inside, but into a protected dir
	link("loop2", "loop1")                              // cycle
	link("loop1", "loop2")
	return ws, canonWS, outside
}

func TestResolvePath(t *testing.T) {
	ws, canonWS, outside := guardFixture(t)
	// relout only points out when outside is a sibling of ws; t.TempDir
	// gives both the same parent.
	require.Equal(t, filepath.Dir(ws), filepath.Dir(outside))

	tests := []guardCase{
		{name: "plain file", p: "README.md", want: "README.md"},
		{name: "nested file", p: "sub/f.txt", want: "sub/f.txt"},
		{name: "workspace itself", p: ".", want: "."},
		{name: "new file in new dirs", p: "new/dir/file.go", write: true, want: "new/dir/file.go"},
		{name: "dot dot that stays inside", p: "sub/../README.md", want: "README.md"},
		{name: "dot dot escape", p: "../x", wantErr: ErrOutsideWorkspace},
		{name: "nested dot dot escape", p: "a/../../x", wantErr: ErrOutsideWorkspace},
		{name: "bare dot dot", p: "..", wantErr: ErrOutsideWorkspace},
		{name: "absolute inside", p: filepath.Join(ws, "sub", "f.txt"), want: "sub/f.txt"},
		{name: "absolute inside canonical spelling", p: filepath.Join(canonWS, "README.md"), want: "README.md"},
		{name: "absolute outside", p: "/etc/passwd", wantErr: ErrOutsideWorkspace},
		{name: "absolute sibling with common prefix", p: ws + "-evil/x", wantErr: ErrOutsideWorkspace},
		{name: "symlink to /etc", p: "etc/passwd", wantErr: ErrOutsideWorkspace},
		{name: "symlink to /etc itself", p: "etc", wantErr: ErrOutsideWorkspace},
		{name: "symlinked parent dir out", p: "outdir/secret", wantErr: ErrOutsideWorkspace},
		{name: "symlinked parent dir out, new file", p: "outdir/new.txt", write: true, wantErr: ErrOutsideWorkspace},
		{name: "dangling symlink out, read", p: "dang", wantErr: ErrOutsideWorkspace},
		{name: "dangling symlink out, write", p: "dang", write: true, wantErr: ErrOutsideWorkspace},
		{name: "relative symlink climbing out", p: "relout/secret", wantErr: ErrOutsideWorkspace},
		{name: "symlink inside resolves", p: "insub/f.txt", want: "sub/f.txt"},
		{name: "dangling symlink inside resolves to its target", p: "danginside", write: true, want: "sub/missing.txt"},
		{name: "symlink cycle", p: "loop1/x", anyErr: true},
		{name: "file used as dir", p: "README.md/x", anyErr: true},
		{name: "empty path", p: "", anyErr: true},
		{name: "NUL byte", p: "a\x00b", anyErr: true},

		{name: "hook readable", p: ".git/hooks/pre-commit", want: ".git/hooks/pre-commit"},
		{name: "hook not writable", p: ".git/hooks/pre-commit", write: true, wantErr: ErrProtectedPath},
		{name: "hooks dir not writable", p: ".git/hooks", write: true, wantErr: ErrProtectedPath},
		{name: "git config not writable", p: ".git/config", write: true, wantErr: ErrProtectedPath},
		{name: "git config any case", p: ".GIT/Config", write: true, wantErr: ErrProtectedPath},
		{name: "git config via absolute path", p: filepath.Join(ws, ".git/config"), write: true, wantErr: ErrProtectedPath},
		{name: "git config via dot dot", p: "sub/../.git/config", write: true, wantErr: ErrProtectedPath},
		{name: "custos settings not writable", p: ".custos/settings.json", write: true, wantErr: ErrProtectedPath},
		{name: "custos settings readable", p: ".custos/settings.json", want: ".custos/settings.json"},
		{name: "hook via symlinked dir", p: "hooks/pre-commit", write: true, wantErr: ErrProtectedPath},
		{name: "git HEAD not writable by the file tools", p: ".git/HEAD", write: true, wantErr: ErrProtectedPath},
		{name: "git HEAD readable", p: ".git/HEAD", want: ".git/HEAD"},
		{name: "gitignore writable", p: ".gitignore", write: true, want: ".gitignore"},
		{name: "custos-like name writable", p: ".custosrc", write: true, want: ".custosrc"},
	}
	// Every entry point gives the same answers: Resolve,
	// ResolveWithWorkspace (which also names the canonical workspace) and
	// ResolveUnder on that workspace (which does not resolve it again).
	entries := map[string]func(p string, write bool) (string, error){
		"Resolve": func(p string, write bool) (string, error) { return Resolve(ws, p, write) },
		"ResolveWithWorkspace": func(p string, write bool) (string, error) {
			got, c, err := ResolveWithWorkspace(ws, p, write)
			if err == nil && c != canonWS {
				return "", errors.New("canonical workspace " + c + ", want " + canonWS)
			}
			return got, err
		},
		"ResolveUnder": func(p string, write bool) (string, error) { return ResolveUnder(canonWS, p, write) },
		// ResolveOpen opens the workspace (by one openat2 when its name
		// has no link, as the fixture's may or may not) and names the
		// Root by its canonical path.
		"ResolveOpen": func(p string, write bool) (string, error) {
			root, got, err := ResolveOpen(ws, p, write)
			if err != nil {
				require.Nil(t, root)
				return got, err
			}
			defer root.Close()
			if root.Name() != canonWS {
				return "", errors.New("root named " + root.Name() + ", want " + canonWS)
			}
			return got, nil
		},
	}
	for _, tc := range tests {
		for entry, resolve := range entries {
			if entry == "ResolveUnder" && ws != canonWS && strings.HasPrefix(tc.p, ws+"/") {
				// Only the canonical spelling names a workspace taken as resolved.
				tc.want, tc.wantErr = "", ErrOutsideWorkspace
			}
			t.Run(entry+"/"+tc.name, func(t *testing.T) {
				tc.check(t, resolve, canonWS)
			})
		}
	}
}

// guardCase is one path of TestResolvePath and what the guard answers.
type guardCase struct {
	name    string
	p       string
	write   bool
	want    string // relative to canonWS; "" when an error is expected
	wantErr error  // sentinel, or nil with anyErr for other failures
	anyErr  bool
}

func (tc guardCase) check(t *testing.T, resolve func(string, bool) (string, error), canonWS string) {
	got, err := resolve(tc.p, tc.write)
	switch {
	case tc.wantErr != nil:
		require.ErrorIs(t, err, tc.wantErr)
		require.Empty(t, got)
	case tc.anyErr:
		require.Error(t, err)
		require.NotErrorIs(t, err, ErrOutsideWorkspace)
		require.Empty(t, got)
	default:
		require.NoError(t, err)
		require.Equal(t, filepath.Join(canonWS, tc.want), got)
	}
}

// ResolveUnder takes its workspace as resolved: one that is not an
// absolute, clean path is refused rather than resolved.
func TestResolveUnderRefusesAWorkspaceNotCanonical(t *testing.T) {
	_, canonWS, _ := guardFixture(t)
	for _, ws := range []string{"", "relative/ws", canonWS + "/sub/..", canonWS + "/"} {
		_, err := ResolveUnder(ws, "README.md", false)
		require.Error(t, err, "workspace %q", ws)
	}
	got, err := ResolveUnder(canonWS, "README.md", false)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(canonWS, "README.md"), got)
}

// The error names the path the model asked for, so the model can correct it.
func TestResolvePathErrorNamesPath(t *testing.T) {
	ws, _, _ := guardFixture(t)
	_, err := Resolve(ws, "outdir/secret", false)
	require.ErrorIs(t, err, ErrOutsideWorkspace)
	require.Contains(t, err.Error(), "outdir/secret")
}

func TestResolvePathWorkspaceThroughSymlink(t *testing.T) {
	ws, canonWS, _ := guardFixture(t)
	alias := filepath.Join(t.TempDir(), "alias")
	require.NoError(t, os.Symlink(ws, alias))

	got, err := Resolve(alias, "sub/f.txt", false)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(canonWS, "sub/f.txt"), got)

	// An absolute path spelled through the alias is inside too.
	got, err = Resolve(alias, filepath.Join(alias, "README.md"), true)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(canonWS, "README.md"), got)

	c, err := CanonicalWorkspace(alias)
	require.NoError(t, err)
	require.Equal(t, canonWS, c)

	// ResolveOpen's one openat2 refuses the alias (a link on the way):
	// the workspace is resolved, and the Root named, canonically.
	root, got, err := ResolveOpen(alias, "sub/f.txt", false)
	require.NoError(t, err)
	defer root.Close()
	require.Equal(t, filepath.Join(canonWS, "sub/f.txt"), got)
	require.Equal(t, canonWS, root.Name())
	fi, err := root.Stat("sub/f.txt")
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular())
}

func TestResolvePathBadWorkspace(t *testing.T) {
	tests := []struct{ name, ws string }{
		{"empty", ""},
		{"missing", filepath.Join(t.TempDir(), "nope")},
		{"file", func() string {
			f := filepath.Join(t.TempDir(), "f")
			require.NoError(t, os.WriteFile(f, nil, 0o644))
			return f
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.ws, "x", false)
			require.Error(t, err)
			root, _, err := ResolveOpen(tc.ws, "x", false)
			require.Error(t, err)
			require.Nil(t, root)
		})
	}
}

func TestResolvePathSymlinkRace(t *testing.T) {
	ws, canonWS, outside := guardFixture(t)
	real := filepath.Join(ws, "d-real")
	link := filepath.Join(ws, "d-link")
	d := filepath.Join(ws, "d")
	require.NoError(t, os.Mkdir(real, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(real, "secret"), []byte("in"), 0o644))
	require.NoError(t, os.Symlink(outside, link))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var flips atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Each rename is atomic: d is, at any instant, missing, the real
			// dir, or the symlink out.
			for _, step := range [][2]string{{real, d}, {d, real}, {link, d}, {d, link}} {
				if err := os.Rename(step[0], step[1]); err != nil {
					t.Errorf("flip %v: %v", step, err)
					return
				}
			}
			flips.Add(1)
		}
	}()

	var inside, refused, otherErr int
	for i := 0; i < 5000; i++ {
		for _, write := range []bool{false, true} {
			got, err := Resolve(ws, "d/secret", write)
			if err != nil {
				if !errors.Is(err, ErrOutsideWorkspace) {
					// A component may vanish mid-walk (readlink of a name
					// just renamed away); any error is a refusal too.
					otherErr++
				}
				refused++
				continue
			}
			inside++
			if _, ok := hostfs.Within(canonWS, got); !ok || strings.Contains(got, outside) {
				close(stop)
				wg.Wait()
				t.Fatalf("Resolve returned %s, outside %s", got, canonWS)
			}
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("flips=%d inside=%d refused=%d (of which other errors %d)", flips.Load(), inside, refused, otherErr)
	require.Positive(t, flips.Load(), "the flipper never ran; the race was not exercised")
}

// The path guard refuses the hooks directory core.hooksPath names, present
// or not yet created, naming the rule; without the setting it is ordinary.
func TestResolvePathHooksPath(t *testing.T) {
	ws := t.TempDir()
	config := filepath.Join(ws, ".git", "config")
	require.NoError(t, os.MkdirAll(filepath.Dir(config), 0o755))
	require.NoError(t, os.WriteFile(config, []byte("[core]\n\tbare = false\n"), 0o644))
	_, err := Resolve(ws, ".husky/_/pre-commit", true)
	require.NoError(t, err, "without core.hooksPath .husky is ordinary")

	require.NoError(t, os.WriteFile(config, []byte("[core]\n\tbare = false\n\thooksPath = .husky/_\n"), 0o644))
	for _, p := range []string{".husky/_/pre-commit", ".husky/_", "./.husky/_/h", filepath.Join(ws, ".husky/_/post-checkout")} {
		_, err := Resolve(ws, p, true)
		var pe *ProtectedError
		require.ErrorAs(t, err, &pe, p)
		assert.Equal(t, protected.GitHooks, pe.Rule)
		assert.Contains(t, err.Error(), "core.hooksPath")
	}
	_, err = Resolve(ws, ".husky/pre-commit", true)
	assert.NoError(t, err, "only the directory git runs hooks from")
}

// Write and Edit refuse what the workspace repository's config includes
// (recursively, existing or not, through a link), and the hooks
// directory an included file names, as they refuse .git/config.
func TestResolvePathIncludes(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	t.Setenv("HOME", t.TempDir())
	config := filepath.Join(ws, ".git", "config")
	require.NoError(t, os.MkdirAll(filepath.Dir(config), 0o755))
	require.NoError(t, os.WriteFile(config, []byte("[include]\n\tpath = ../a.cfg\n[includeIf \"onbranch:x\"]\n\tpath = ../missing.cfg\n\tpath = ../link.cfg\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "a.cfg"), []byte("[include]\n\tpath = b/c.cfg\n[core]\n\thooksPath = hk\n"), 0o644))
	require.NoError(t, os.Symlink("real.cfg", filepath.Join(ws, "link.cfg")))
	for _, p := range []string{"a.cfg", "b/c.cfg", "missing.cfg", "real.cfg", "hk/pre-commit"} {
		_, err := Resolve(ws, p, true)
		var pe *ProtectedError
		require.ErrorAs(t, err, &pe, p)
		_, err = Resolve(ws, p, false)
		assert.NoError(t, err, "read: %s", p)
	}
	_, err = Resolve(ws, "b/other.cfg", true)
	assert.NoError(t, err, "only what git reads")
}
