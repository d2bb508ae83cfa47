package masks

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/pathglob"
)

// maskTree builds a workspace from "path" (file) and "path/" (directory)
// entries, and "link -> target" symlinks.
func maskTree(t *testing.T, entries ...string) string {
	t.Helper()
	ws := realPath(t, t.TempDir())
	for _, e := range entries {
		if l, target, ok := strings.Cut(e, " -> "); ok {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, l)), 0o755))
			require.NoError(t, os.Symlink(target, filepath.Join(ws, l)))
			continue
		}
		p := filepath.Join(ws, e)
		if strings.HasSuffix(e, "/") {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("content of "+e), 0o644))
	}
	return ws
}

func TestExpandMasks(t *testing.T) {
	// Each case lists the resulting masks as "kind path[/][ missing]" and the
	// pins, relative to the workspace.
	tests := []struct {
		name       string
		tree       []string
		setup      func(t *testing.T, ws string)
		read, edit []string
		masks      []string
		pins       []string
	}{
		{name: "no rules", tree: []string{".env"}},
		{name: "base name matches at any depth", tree: []string{".env", "a/.env", "a/b/.env", "a/b/x.env"}, read: []string{".env"},
			masks: []string{"hide .env", "hide a/.env", "hide a/b/.env"}, pins: []string{"a", "a/b"}},
		{name: "missing literal gets a placeholder", tree: []string{"src/main.go"}, read: []string{".env"}, edit: []string{"config/prod.json"},
			masks: []string{"hide .env missing", "readonly config/prod.json missing"}, pins: []string{"config"}},
		{name: "globstar also matches no directory", tree: []string{"secrets/a.key", "x/secrets/b.key", "k.pem", "a/k.pem"}, read: []string{"**/secrets/**", "**/*.pem"},
			masks: []string{"hide a/k.pem", "hide k.pem", "hide secrets/", "hide x/secrets/"}, pins: []string{"a", "x"}},
		{name: "star stays in one directory", tree: []string{"keys/a.pem", "keys/sub/b.pem", "c.pem"}, read: []string{"keys/*.pem"},
			masks: []string{"hide keys/a.pem"}, pins: []string{"keys"}},
		{name: "globstar crosses directories, none included", tree: []string{"keys/a.pem", "keys/sub/b.pem", "c.pem", "src/x.go"}, read: []string{"keys/**/*.pem"},
			masks: []string{"hide keys/a.pem", "hide keys/sub/b.pem"}, pins: []string{"keys", "keys/sub"}},
		{name: "dir/** hides the directory as a whole", tree: []string{"secrets/a.key", "secrets/deep/b.key", "src/x.go"}, read: []string{"secrets/**"},
			masks: []string{"hide secrets/"}},
		{name: "trailing slash means everything below", tree: []string{"secrets/a.key"}, read: []string{"secrets/"},
			masks: []string{"hide secrets/"}},
		{name: "missing dir/** gets a placeholder directory", tree: []string{"src/x.go"}, edit: []string{"vendor/**"},
			masks: []string{"readonly vendor/ missing"}},
		{name: "edit dir read-only, read mask inside still applies", tree: []string{"config/.env", "config/app.yml"}, read: []string{"config/.env"}, edit: []string{"config/**"},
			masks: []string{"readonly config/", "hide config/.env"}},
		{name: "read beats edit on the same path", tree: []string{".env"}, read: []string{".env"}, edit: []string{".env"},
			masks: []string{"hide .env"}},
		{name: "nothing below a hidden directory", tree: []string{"secrets/a.key"}, read: []string{"secrets/**"}, edit: []string{"secrets/a.key", "secrets/new"},
			masks: []string{"hide secrets/"}},
		{name: "symlink matched by a read rule hides its target", tree: []string{"real.txt", ".env -> real.txt"}, read: []string{".env"},
			masks: []string{"hide real.txt"}},
		{name: "literal through a symlinked directory is masked at its real place", tree: []string{"cfgreal/.env", "cfg -> cfgreal"}, read: []string{"cfg/.env"},
			masks: []string{"hide cfgreal/.env"}, pins: []string{"cfgreal"}},
		{name: "wildcard rule through a symlinked directory masks the target", tree: []string{"real-conf/x.pem", "real-conf/y.txt", "conf -> real-conf"}, read: []string{"conf/*.pem"},
			masks: []string{"hide real-conf/x.pem"}, pins: []string{"real-conf"}},
		{name: "symlink loop is not walked forever", tree: []string{"a/k.pem", "a/loop -> ..", "l -> a"}, read: []string{"l/*/*/*.pem", "**/*.pem"},
			masks: []string{"hide a/k.pem"}, pins: []string{"a"}},
		{name: "whole-workspace edit deny", tree: []string{"a.txt"}, edit: []string{"**"},
			masks: []string{"readonly ./"}},
		{name: "regexp rule", tree: []string{"a/id_rsa", "a/id_rsa.pub", "b.txt"}, read: []string{`re:id_rsa$`},
			masks: []string{"hide a/id_rsa"}, pins: []string{"a"}},
		{name: "absolute pattern inside the workspace", tree: []string{"db/pass.txt"}, read: []string{"{ws}/db/pass.txt"},
			masks: []string{"hide db/pass.txt"}, pins: []string{"db"}},
		{name: "hard link of a masked file is masked too", tree: []string{".env", "other/"}, read: []string{".env"},
			setup: func(t *testing.T, ws string) {
				require.NoError(t, os.Link(filepath.Join(ws, ".env"), filepath.Join(ws, "other/hard")))
			},
			masks: []string{"hide .env", "hide other/hard"}, pins: []string{"other"}},
		{name: "dir/** naming a file: read-only for Edit, nothing for Read", tree: []string{"vendor", "secrets"}, read: []string{"secrets/**"}, edit: []string{"vendor/**"},
			masks: []string{"readonly vendor"}},
		{name: "./ prefix is the workspace", tree: []string{"x/y.txt"}, edit: []string{"./x/y.txt"},
			masks: []string{"readonly x/y.txt"}, pins: []string{"x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := maskTree(t, tc.tree...)
			if tc.setup != nil {
				tc.setup(t, ws)
			}
			sub := func(l []string) []string {
				var out []string
				for _, s := range l {
					out = append(out, strings.ReplaceAll(s, "{ws}", ws))
				}
				return out
			}
			plan, err := Expand(ws, sub(tc.read), sub(tc.edit))
			require.NoError(t, err)
			var got []string
			for _, m := range plan.Masks {
				rel, err := filepath.Rel(ws, m.Path)
				require.NoError(t, err)
				s := string(m.Kind) + " " + rel
				if m.Dir {
					s += "/"
				}
				if m.Missing {
					s += " missing"
				}
				got = append(got, s)
			}
			var pins []string
			for _, p := range plan.Pins {
				rel, err := filepath.Rel(ws, p)
				require.NoError(t, err)
				pins = append(pins, rel)
			}
			assert.Equal(t, tc.masks, got)
			assert.Equal(t, tc.pins, pins)
		})
	}
}

func TestExpandMasksRefuses(t *testing.T) {
	tests := []struct {
		name       string
		tree       []string
		read, edit []string
		want       string
	}{
		{name: "reading the whole workspace denied", read: []string{"**"}, want: "whole workspace"},
		{name: "an absolute rule above the workspace covers it", read: []string{"/**"}, want: "whole workspace"},
		{name: "edit rule on a symlink", tree: []string{"real", "link -> real"}, edit: []string{"link"}, want: "symbolic link"},
		{name: "relative pattern leaving the workspace", read: []string{"../x"}, want: "must not leave"},
		{name: "unexpanded home", read: []string{"~/.ssh/id_rsa"}, want: "~ must be expanded"},
		{name: "bad regexp", read: []string{"re:("}, want: "bad regular expression"},
		{name: "bad glob", read: []string{"a/[x"}, want: "bad glob"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := maskTree(t, tc.tree...)
			_, err := Expand(ws, tc.read, tc.edit)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrMasks), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The walk is bounded: a rule that needs more entries checked than the
// limit fails closed instead of masking part of what it names; anchored
// rules skip the rest of the tree and pass. (The limit is lowered here; the
// real one is maxMaskWalkEntries.)
func TestExpandMasksBounded(t *testing.T) {
	defer func(n int) { maxMaskWalkEntries = n }(maxMaskWalkEntries)
	maxMaskWalkEntries = 1000
	ws := realPath(t, t.TempDir())
	for i := 0; i < 20; i++ {
		d := filepath.Join(ws, "big", strconv.Itoa(i))
		require.NoError(t, os.MkdirAll(d, 0o755))
		for j := 0; j < 60; j++ {
			require.NoError(t, os.WriteFile(filepath.Join(d, strconv.Itoa(j)), nil, 0o644))
		}
	}
	_, err := Expand(ws, []string{"*.key"}, nil)
	require.ErrorIs(t, err, ErrMasks)
	assert.Contains(t, err.Error(), "anchor the rules")

	plan, err := Expand(ws, []string{"secrets/*.key", "config/.env"}, nil)
	require.NoError(t, err, "anchored rules do not walk big/")
	assert.Len(t, plan.Masks, 1, "only the config/.env placeholder")

	defer func(n int) { maxMasks = n }(maxMasks)
	maxMasks = 10
	_, err = Expand(ws, []string{"big/1/*"}, nil)
	require.ErrorIs(t, err, ErrMasks)
	assert.Contains(t, err.Error(), "deny whole directories")
}

// The argument vector is a pure function of the plan: pins bind a
// directory onto itself, hidden paths get the mode-000 sources, read-only
// ones are bound onto themselves, missing ones get the empty directory
// whatever their kind.
func TestMaskPlanArgs(t *testing.T) {
	plan := Plan{
		Workspace: "/w",
		Pins:      []string{"/w/a"},
		Masks: []Mask{
			{Path: "/w/a/.env", Kind: Hide},
			{Path: "/w/a/keys", Kind: Hide, Dir: true},
			{Path: "/w/go.mod", Kind: ReadOnly},
			{Path: "/w/new", Kind: ReadOnly, Missing: true},
			{Path: "/w/vendor", Kind: ReadOnly, Dir: true, Missing: true},
		},
	}
	pins, masks := plan.Args(Sources{HideFile: "/S/file", HideDir: "/S/dir", Empty: "/S/empty"})
	assert.Equal(t, []string{"--bind", "/w/a", "/w/a"}, pins)
	assert.Equal(t, []string{
		"--ro-bind", "/S/file", "/w/a/.env",
		"--ro-bind", "/S/dir", "/w/a/keys",
		"--ro-bind", "/w/go.mod", "/w/go.mod",
		"--ro-bind", "/S/empty", "/w/new",
		"--ro-bind", "/S/empty", "/w/vendor",
	}, masks)
	assert.True(t, plan.Hides("a/.env"))
	assert.True(t, plan.Hides("a/keys/k1"))
	assert.False(t, plan.Hides("a/keysx"))
	assert.False(t, plan.Hides("go.mod"))
}

func TestDeniedBy(t *testing.T) {
	ws := "/w"
	tests := []struct {
		rel      string
		dir      bool
		patterns []string
		want     string
	}{
		{rel: ".env", patterns: []string{".env"}, want: ".env"},
		{rel: "a/b/.env", patterns: []string{"*.go", ".env"}, want: ".env"},
		{rel: "secrets/x/k", patterns: []string{"secrets/**"}, want: "secrets/**"},
		{rel: "secrets", dir: true, patterns: []string{"secrets/**"}, want: "secrets/**"},
		{rel: "secretsx/k", patterns: []string{"secrets/**"}},
		{rel: "build/out/a.o", patterns: []string{"build"}, want: "build"},
		{rel: "keys/a.pem", patterns: []string{"keys/*.pem"}, want: "keys/*.pem"},
		{rel: "keys/sub/a.pem", patterns: []string{"keys/*.pem"}},
		{rel: "src/main.go", patterns: []string{"**"}, want: "**"},
		{rel: "db/pass", patterns: []string{"/w/db/**"}, want: "/w/db/**"},
		{rel: "a/id_rsa", patterns: []string{`re:id_rsa$`}, want: `re:id_rsa$`},
		{rel: ".", patterns: []string{".env"}},
	}
	for _, tc := range tests {
		got, err := DeniedBy(ws, tc.rel, tc.dir, tc.patterns)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s %v", tc.rel, tc.patterns)
	}
	_, err := DeniedBy(ws, "x", false, []string{"re:("})
	assert.ErrorIs(t, err, ErrMasks)
}

// A workspace whose own name holds glob metacharacters is matched
// literally: its name is escaped before the rules' globs are joined to it.
// An absolute rule names it escaped, as suggested rules are written.
func TestExpandMasksWorkspaceWithGlobCharacters(t *testing.T) {
	ws := filepath.Join(realPath(t, t.TempDir()), `w[1]*{x,y}?\`)
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "a"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "a", "b.key"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "a", "c.txt"), nil, 0o644))
	abs := pathglob.Escape(ws) + "/a/c.txt"
	plan, err := Expand(ws, []string{"a/*.key"}, []string{abs})
	require.NoError(t, err)
	require.Len(t, plan.Masks, 2, "%+v", plan.Masks)
	assert.Equal(t, Mask{Path: filepath.Join(ws, "a", "b.key"), Kind: Hide, Rule: "a/*.key"}, plan.Masks[0])
	assert.Equal(t, Mask{Path: filepath.Join(ws, "a", "c.txt"), Kind: ReadOnly, Rule: abs}, plan.Masks[1])
}

// realPath is p with its symbolic links resolved (t.TempDir may be below one).
func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return r
}
