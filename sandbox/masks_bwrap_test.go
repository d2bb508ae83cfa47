package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/sandbox/masks"
)

// maskCase is one attempt at what a deny rule forbids. Each runs twice on
// real bubblewrap: without the rules the attempt must succeed (leaked
// reports true), which proves the command works and the rule is the cause;
// with them it must not.
type maskCase struct {
	name       string
	tree       []string // see maskTree; every file holds "content of <path>"
	setup      func(t *testing.T, ws string)
	read, edit []string
	script     string
	needs      string // a program the script needs (python3, perl)
	leaked     func(t *testing.T, ws string, res Result) bool
}

// printed: the content of rel reached the command's output.
func printed(rel string) func(*testing.T, string, Result) bool {
	return func(t *testing.T, ws string, res Result) bool {
		return strings.Contains(res.Stdout, "content of "+rel)
	}
}

// changed: rel no longer holds its original content (or is gone, or is no
// longer a regular file).
func changed(rel string) func(*testing.T, string, Result) bool {
	return func(t *testing.T, ws string, res Result) bool {
		fi, err := os.Lstat(filepath.Join(ws, rel))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
			return true
		}
		b, err := os.ReadFile(filepath.Join(ws, rel))
		return err != nil || string(b) != "content of "+rel
	}
}

// exists: rel was created (a file, a directory or a link).
func maskExists(rel string) func(*testing.T, string, Result) bool {
	return func(t *testing.T, ws string, res Result) bool {
		_, err := os.Lstat(filepath.Join(ws, rel))
		return err == nil
	}
}

func TestBwrapMasksEnforceDenyRules(t *testing.T) {
	sb := newBwrap(t, Config{})
	env := []string{".env", "src/main.go"}
	cases := []maskCase{
		// A Read-denied file cannot be read by any command.
		{name: "read/cat", tree: env, read: []string{".env"}, script: "cat .env", leaked: printed(".env")},
		{name: "read/cp", tree: env, read: []string{".env"}, script: "cp .env /tmp/x; cat /tmp/x", leaked: printed(".env")},
		{name: "read/tar", tree: env, read: []string{".env"}, script: "tar cf - .env | tar xOf -", leaked: printed(".env")},
		{name: "read/less redirect", tree: env, read: []string{".env"}, script: "less < .env", leaked: printed(".env")},
		{name: "read/shell read loop", tree: env, read: []string{".env"}, script: "while IFS= read -r l || [ -n \"$l\" ]; do echo \"$l\"; done < .env", leaked: printed(".env")},
		{name: "read/python", tree: env, read: []string{".env"}, needs: "python3", script: `python3 -c 'print(open(".env").read())'`, leaked: printed(".env")},
		{name: "read/perl", tree: env, read: []string{".env"}, needs: "perl", script: `perl -e 'open(F, "<", ".env") or die; print <F>'`, leaked: printed(".env")},
		{name: "read/relative symlink", tree: env, read: []string{".env"}, script: "ln -s .env l; cat l", leaked: printed(".env")},
		{name: "read/absolute symlink", tree: env, read: []string{".env"}, script: "ln -s \"$PWD/.env\" src/l; cat src/l", leaked: printed(".env")},
		{name: "read/hard link attempt", tree: env, read: []string{".env"}, script: "ln .env h; cat h", leaked: printed(".env")},
		{name: "read/hard link made earlier", tree: env, read: []string{".env"},
			setup: func(t *testing.T, ws string) {
				require.NoError(t, os.Link(filepath.Join(ws, ".env"), filepath.Join(ws, "src/h")))
			},
			script: "cat src/h", leaked: printed(".env")},
		{name: "read/rename then read", tree: env, read: []string{".env"}, script: "mv .env x; cat x", leaked: printed(".env")},
		{name: "read/recursive grep", tree: env, read: []string{".env"}, script: "grep -r 'content of' .", leaked: printed(".env")},
		{name: "read/rename the parent away from the rule", tree: []string{"config/.env"}, read: []string{"config/.env"}, script: "mv config c2; cat c2/.env", leaked: printed("config/.env")},
		{name: "read/base name at depth", tree: []string{"a/b/.env"}, read: []string{".env"}, script: "cat a/b/.env", leaked: printed("a/b/.env")},
		{name: "read/star glob", tree: []string{"keys/a.pem", "keys/readme"}, read: []string{"keys/*.pem"}, script: "cat keys/a.pem", leaked: printed("keys/a.pem")},
		{name: "read/globstar", tree: []string{"keys/x/y/b.pem"}, read: []string{"keys/**/*.pem"}, script: "cat keys/x/y/b.pem", leaked: printed("keys/x/y/b.pem")},
		{name: "read/directory", tree: []string{"secrets/deep/k.key"}, read: []string{"secrets/**"}, script: "cat secrets/deep/k.key; ls -R secrets", leaked: func(t *testing.T, ws string, res Result) bool {
			return strings.Contains(res.Stdout, "content of") || strings.Contains(res.Stdout, "k.key")
		}},
		{name: "read/wildcard rule through a symlinked directory", tree: []string{"real-conf/x.pem", "conf -> real-conf"}, read: []string{"conf/*.pem"}, script: "cat conf/x.pem real-conf/x.pem", leaked: printed("real-conf/x.pem")},
		{name: "read/absolute rule on a system file the sandbox shows", tree: env, read: []string{"/etc/os-release"}, script: "cat /etc/os-release", leaked: func(t *testing.T, ws string, res Result) bool {
			return strings.Contains(res.Stdout, "ID=")
		}},
		{name: "read/directory via symlink to it", tree: []string{"secrets/k.key"}, read: []string{"secrets/**"}, script: "ln -s secrets s; cat s/k.key", leaked: printed("secrets/k.key")},

		// An Edit-denied file cannot be changed, renamed, replaced or deleted.
		{name: "edit/truncating redirect", tree: []string{"go.mod", "other"}, edit: []string{"go.mod"}, script: "echo x > go.mod", leaked: changed("go.mod")},
		{name: "edit/append", tree: []string{"go.mod", "other"}, edit: []string{"go.mod"}, script: "echo x >> go.mod", leaked: changed("go.mod")},
		{name: "edit/sed -i", tree: []string{"go.mod", "other"}, edit: []string{"go.mod"}, script: "sed -i s/content/changed/ go.mod", leaked: changed("go.mod")},
		{name: "edit/mv over it", tree: []string{"go.mod", "other"}, edit: []string{"go.mod"}, script: "mv other go.mod", leaked: changed("go.mod")},
		{name: "edit/cp over it", tree: []string{"go.mod", "other"}, edit: []string{"go.mod"}, script: "cp other go.mod", leaked: changed("go.mod")},
		{name: "edit/rm", tree: []string{"go.mod", "other"}, edit: []string{"go.mod"}, script: "rm -f go.mod", leaked: changed("go.mod")},
		{name: "edit/rename", tree: []string{"go.mod", "other"}, edit: []string{"go.mod"}, script: "mv go.mod moved", leaked: changed("go.mod")},
		{name: "edit/replace by symlink", tree: []string{"go.mod", "other"}, edit: []string{"go.mod"}, script: "ln -sf other go.mod", leaked: changed("go.mod")},
		{name: "edit/truncate", tree: []string{"go.mod", "other"}, edit: []string{"go.mod"}, script: "truncate -s 0 go.mod", leaked: changed("go.mod")},
		{name: "edit/chmod", tree: []string{"go.mod", "other"}, edit: []string{"go.mod"}, script: "chmod 600 go.mod", leaked: changed("go.mod")},
		{name: "edit/python os.replace", tree: []string{"go.mod", "other"}, edit: []string{"go.mod"}, needs: "python3", script: `python3 -c 'import os; os.replace("other", "go.mod")'`, leaked: changed("go.mod")},
		{name: "edit/rename the parent, then write", tree: []string{"config/app.yml"}, edit: []string{"config/app.yml"}, script: "mv config c2; echo x > c2/app.yml", leaked: changed("config/app.yml")},
		{name: "edit/globstar", tree: []string{"a/b/c.lock"}, edit: []string{"**/*.lock"}, script: "echo x > a/b/c.lock", leaked: changed("a/b/c.lock")},
		{name: "edit/file in a denied directory", tree: []string{"vendor/lib.go"}, edit: []string{"vendor/**"}, script: "echo x > vendor/lib.go", leaked: changed("vendor/lib.go")},
		{name: "edit/delete in a denied directory", tree: []string{"vendor/lib.go"}, edit: []string{"vendor/**"}, script: "rm -rf vendor", leaked: changed("vendor/lib.go")},
		{name: "edit/new file in a denied directory", tree: []string{"vendor/lib.go"}, edit: []string{"vendor/**"}, script: "echo x > vendor/new.go", leaked: maskExists("vendor/new.go")},

		// A denied path that does not exist yet cannot be created, and no
		// placeholder is left behind.
		{name: "create/read-denied file", tree: []string{"src/main.go"}, read: []string{".env"}, script: "echo x > .env", leaked: maskExists(".env")},
		{name: "create/edit-denied file with missing parents", tree: []string{"src/main.go"}, edit: []string{"config/prod.json"}, script: "mkdir -p config && echo x > config/prod.json", leaked: maskExists("config/prod.json")},
		{name: "create/as a symlink", tree: []string{"src/main.go"}, edit: []string{".env"}, script: "ln -s /etc/hostname .env", leaked: maskExists(".env")},
		{name: "create/denied directory", tree: []string{"src/main.go"}, edit: []string{"vendor/**"}, script: "mkdir -p vendor && echo x > vendor/a.go", leaked: maskExists("vendor/a.go")},
		{name: "create/by rename", tree: []string{"src/main.go"}, edit: []string{".env"}, script: "echo x > y; mv y .env", leaked: maskExists(".env")},
		{name: "create/by copy", tree: []string{"src/main.go"}, read: []string{".env"}, script: "cp src/main.go .env", leaked: maskExists(".env")},
		{name: "create/by hard link", tree: []string{"src/main.go"}, read: []string{".env"}, script: "ln src/main.go .env", leaked: maskExists(".env")},
	}
	for _, m := range mounters(t, sb) {
		sb := m.sb
		t.Run(m.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					if tc.needs != "" {
						if _, err := exec.LookPath(tc.needs); err != nil {
							t.Skipf("%s not installed", tc.needs)
						}
					}
					for _, withRules := range []bool{false, true} {
						ws := maskTree(t, tc.tree...)
						if tc.setup != nil {
							tc.setup(t, ws)
						}
						req := Request{Workspace: ws, Argv: bash(tc.script), Timeout: 20 * time.Second}
						if withRules {
							req.ReadDeny, req.EditDeny = tc.read, tc.edit
						}
						res, err := sb.Run(context.Background(), req)
						require.NoError(t, err)
						leaked := tc.leaked(t, ws, res)
						if withRules {
							assert.False(t, leaked, "with the rules the attempt must fail\nstdout: %s\nstderr: %s", res.Stdout, res.Stderr)
						} else {
							assert.True(t, leaked, "without the rules the attempt must work (else the test proves nothing)\nstdout: %s\nstderr: %s", res.Stdout, res.Stderr)
						}
					}
				})
			}
		})
	}
}

// After a run with masks, the workspace is as it was: placeholders and the
// directories made for them are gone, masked files are untouched, and what
// the command legitimately wrote stays.
func TestBwrapMasksLeaveNoTrace(t *testing.T) {
	sb := newBwrap(t, Config{})
	ws := maskTree(t, ".env", "src/main.go")
	tmp := t.TempDir() // the mask sources go here, away from other tests' runs
	t.Setenv("TMPDIR", tmp)
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Timeout: 20 * time.Second,
		Argv:     bash("echo ok > src/out.txt; ls -a; ls -a config 2>&1"),
		ReadDeny: []string{".env", "secrets/**", "config/db/pass.txt"},
		EditDeny: []string{"go.sum"}})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode, res.Stderr)
	assert.Contains(t, res.Stdout, "go.sum", "the placeholder exists during the run")
	for _, rel := range []string{"go.sum", "secrets", "config"} {
		_, err := os.Lstat(filepath.Join(ws, rel))
		assert.True(t, os.IsNotExist(err), "%s must be gone after the run: %v", rel, err)
	}
	b, err := os.ReadFile(filepath.Join(ws, ".env"))
	require.NoError(t, err)
	assert.Equal(t, "content of .env", string(b))
	b, err = os.ReadFile(filepath.Join(ws, "src/out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "ok\n", string(b))
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "mask sources are removed")
}

// Unrelated work is not disturbed: the rest of the workspace stays
// readable and writable, and a denied file's directory still takes new
// files.
func TestBwrapMasksKeepTheRestWorking(t *testing.T) {
	sb := newBwrap(t, Config{})
	ws := maskTree(t, "config/.env", "config/app.yml", "src/main.go")
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Timeout: 20 * time.Second,
		Argv:     bash("cat config/app.yml src/main.go && echo new > config/new.yml && echo more >> src/main.go && cat config/.env"),
		ReadDeny: []string{"config/.env"}})
	require.NoError(t, err)
	assert.Contains(t, res.Stdout, "content of config/app.yml")
	assert.Contains(t, res.Stderr, "Permission denied", "the masked file says why it cannot be read")
	b, err := os.ReadFile(filepath.Join(ws, "config/new.yml"))
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(b))
	b, err = os.ReadFile(filepath.Join(ws, "src/main.go"))
	require.NoError(t, err)
	assert.Equal(t, "content of src/main.gomore\n", string(b))
}

// A rule the sandbox cannot enforce refuses the command before it runs.
func TestBwrapMasksFailClosed(t *testing.T) {
	sb := newBwrap(t, Config{})
	ws := maskTree(t, "real", "link -> real")
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash("echo ran > ran.txt"), EditDeny: []string{"link"}})
	require.ErrorIs(t, err, masks.ErrMasks)
	assert.Contains(t, err.Error(), "symbolic link")
	assert.NoFileExists(t, filepath.Join(ws, "ran.txt"), fmt.Sprint(res))
}

// git keeps working with placeholders in place: an empty directory is
// invisible to it (an unreadable placeholder file would make `git add -A`
// fail), and nothing of the placeholder ends up in a commit.
func TestBwrapMasksLetGitWork(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	sb := newBwrap(t, Config{})
	ws := maskTree(t, "src/main.go")
	// The repository exists before: a command may not make a workspace a
	// repository (see the protected paths).
	out, err := exec.Command("git", "init", "-q", ws).CombinedOutput()
	require.NoError(t, err, string(out))
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Timeout: 30 * time.Second,
		Argv: bash(`set -e; git -c user.email=a@b -c user.name=a add -A; ` +
			`git -c user.email=a@b -c user.name=a commit -qm x; git ls-files; git status --porcelain`),
		ReadDeny: []string{".env", "secrets/**"}, EditDeny: []string{"config/prod.json"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	assert.Equal(t, "src/main.go\n", res.Stdout, "only the real file is committed, and the tree is clean")
}

// Pins go before the protected paths: pinning .git for a rule below it
// must not make .git/hooks or .git/config writable again, while the rest
// of .git stays writable.
func TestBwrapMasksKeepProtectedPathsReadOnly(t *testing.T) {
	sb := newBwrap(t, Config{})
	ws := maskTree(t, ".git/hooks/pre-commit", ".git/config", ".git/secret", ".git/HEAD")
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Timeout: 20 * time.Second,
		Argv:     bash("echo evil > .git/hooks/pre-commit; echo evil > .git/config; echo ref > .git/HEAD; cat .git/secret"),
		ReadDeny: []string{".git/secret"}})
	require.NoError(t, err)
	for _, rel := range []string{".git/hooks/pre-commit", ".git/config"} {
		b, err := os.ReadFile(filepath.Join(ws, rel))
		require.NoError(t, err)
		assert.Equal(t, "content of "+rel, string(b), "%s stays read-only", rel)
	}
	b, err := os.ReadFile(filepath.Join(ws, ".git/HEAD"))
	require.NoError(t, err)
	assert.Equal(t, "ref\n", string(b), "the rest of .git stays writable")
	assert.NotContains(t, res.Stdout, "content of .git/secret")
}

// maskTree builds a workspace from "path" (file) and "path/" (directory)
// entries, and "link -> target" symlinks.
func maskTree(t *testing.T, entries ...string) string {
	t.Helper()
	ws := mustEval(t, t.TempDir())
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
