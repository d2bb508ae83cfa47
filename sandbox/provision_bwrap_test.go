package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/sandbox/provision"
)

// goProject writes a Go module that tests with testify (a dependency with
// dependencies of its own), its go.mod and go.sum made by the host's go
// from the host's module cache alone, as a user's checkout has them.
func goProject(t *testing.T, goLine string) string {
	t.Helper()
	ws := t.TempDir()
	write(t, ws, "go.mod", "module example.com/proj\n\ngo "+goLine+"\n")
	write(t, ws, "calc.go", "package proj\n\nfunc Add(a, b int) int { return a + b }\n")
	write(t, ws, "calc_test.go", `package proj

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAdd(t *testing.T) { assert.Equal(t, 3, Add(1, 2)) }
`)
	cmd := exec.Command("go", "get", "github.com/stretchr/testify@"+testifyVersion(t))
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the host's go get, from its module cache: %s", out)
	cmd = exec.Command("go", "mod", "tidy")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOTOOLCHAIN=local")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "the host's go mod tidy, from its module cache: %s", out)
	return ws
}

// testifyVersion is the testify custos itself requires: the one the host's
// module cache holds wherever custos' tests were built.
func testifyVersion(t *testing.T) string {
	b, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "github.com/stretchr/testify" {
			return f[1]
		}
	}
	t.Fatal("custos' go.mod requires no testify")
	return ""
}

func write(t testing.TB, dir, name, data string) {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
}

// TestGoModuleWithDependencyTestsOffline: a Go module with one dependency
// once could not run its tests in the sandbox. Now
// its modules come from the host's module cache, offline; the second run
// is warm (the workspace's own build cache answers); go vet works too.
func TestGoModuleWithDependencyTestsOffline(t *testing.T) {
	cache := t.TempDir()
	sb := newBwrap(t, Config{CacheDir: cache})
	ws := goProject(t, "1.22")
	ctx := context.Background()

	first, err := sb.Run(ctx, Request{Workspace: ws, Argv: bash("go test ./... && go vet ./..."), Timeout: 5 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, 0, first.ExitCode, "stdout: %s\nstderr: %s", first.Stdout, first.Stderr)
	assert.Contains(t, first.Stdout, "ok  \texample.com/proj")
	assert.NotContains(t, first.Stdout, "(cached)")
	assert.Equal(t, provision.CacheDirFor(cache, ws), first.CacheDir)

	second, err := sb.Run(ctx, Request{Workspace: ws, Argv: bash("go test ./..."), Timeout: 5 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, 0, second.ExitCode, "stderr: %s", second.Stderr)
	assert.Contains(t, second.Stdout, "(cached)", "the second go test of a workspace is warm")

	// The modules were extracted into the workspace's own module cache.
	_, err = os.Stat(filepath.Join(provision.CacheDirFor(cache, ws), "cache", "go-mod", "github.com", "stretchr", "testify@"+testifyVersion(t)))
	assert.NoError(t, err)
}

// secret is what every credential file of fakeHome holds.
const secret = "SECRET-TOKEN-5f1c"

// fakeHome is a user's home with a cache for every toolchain and every
// credential a toolchain keeps (tokens, keys, logins), some of them inside the caches and some
// reached from a cache through a symbolic link. It returns the home, the
// environment that points the sandbox at it, and the credential paths.
func fakeHome(t *testing.T) (home string, env provision.HostEnv, creds []string) {
	t.Helper()
	home = t.TempDir()
	creds = []string{
		".npmrc", ".netrc", ".git-credentials", ".docker/config.json", ".config/gh/hosts.yml",
		".ssh/id_ed25519", ".aws/credentials", ".m2/settings.xml", ".m2/settings-security.xml",
		".cargo/credentials.toml", ".config/gcloud/credentials.db", ".kube/config", ".pypirc",
		// Inside the caches themselves:
		"go/pkg/mod/cache/download/.netrc", ".npm/_cacache/.npmrc", ".cargo/registry/index/credentials",
		".m2/repository/settings.xml", "go/pkg/mod/cache/download/example.com/.ssh/id_rsa",
	}
	for _, c := range creds {
		write(t, home, c, "token="+secret+"\n")
	}
	for _, f := range []string{
		"go/pkg/mod/cache/download/example.com/m/@v/v1.0.0.mod", ".npm/_cacache/index-v5/aa/bb/entry",
		".cargo/registry/index/crates.io/config.json", ".cargo/registry/cache/crates.io/x.crate",
		".cargo/git/db/x/HEAD", ".m2/repository/org/x/x.pom",
	} {
		write(t, home, f, "cache entry\n")
	}
	// Links from the caches to what they must not reach.
	for link, target := range map[string]string{
		"go/pkg/mod/cache/download/ssh": "../../../../../.ssh",
		".npm/_cacache/npmrc":           filepath.Join(home, ".npmrc"),
		".cargo/registry/cache/creds":   filepath.Join(home, ".cargo/credentials.toml"),
		".m2/repository/settings-link":  filepath.Join(home, ".m2/settings.xml"),
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(home, link)))
	}
	vars := map[string]string{"GOMODCACHE": filepath.Join(home, "go/pkg/mod")}
	env = provision.HostEnv{Home: home, Getenv: func(k string) string { return vars[k] }}
	for i, c := range creds {
		creds[i] = filepath.Join(home, c)
	}
	return home, env, creds
}

// polyglot is a workspace with a project file of every toolchain.
func polyglot(t *testing.T) string {
	ws := t.TempDir()
	for _, f := range []string{"go.mod", "package.json", "Cargo.toml", "pom.xml", "pyproject.toml"} {
		write(t, ws, f, "\n")
	}
	return ws
}

// TestCredentialsStayUnreadable: with every cache of a home mounted, none
// of the home's credentials can be read from inside: not at their own
// paths, not inside a cache, not through a link from a cache; and a search
// of everything the sandbox mounts finds no secret.
func TestCredentialsStayUnreadable(t *testing.T) {
	home, env, creds := fakeHome(t)
	b := newBwrap(t, Config{HostEnv: env}).(*bwrapSandbox)
	ws := polyglot(t)

	pr, err := b.prov.Plan(ws, provision.Want{}, nil)
	require.NoError(t, err)
	b.prov.Release(pr)
	var mounted, hostPaths []string
	for _, p := range pr.ReadOnly {
		mounted, hostPaths = append(mounted, p.SandboxPath()), append(hostPaths, p.Path)
	}
	for _, want := range []string{"go/pkg/mod/cache/download", ".npm/_cacache", ".cargo/registry/index", ".cargo/registry/cache", ".cargo/git/db", ".m2/repository"} {
		assert.Contains(t, hostPaths, filepath.Join(home, want), "the cache is mounted (else this test proves nothing)")
	}

	script := "for p in \"$@\"; do if cat \"$p\" 2>/dev/null | grep -q " + secret + "; then echo \"LEAK $p\"; fi; done\n" +
		"grep -rl " + secret + " " + strings.Join(mounted, " ") + " /tmp /var/cache/custos 2>/dev/null | sed 's/^/LEAK-GREP /'\n" +
		// The caches are there, readable:
		"cat " + filepath.Join(home, ".m2/repository/org/x/x.pom") + "\n"
	args := append([]string{"bash", "-c", script, "probe"}, creds...)
	args = append(args, filepath.Join(home, "go/pkg/mod/cache/download/ssh/id_ed25519"), filepath.Join(home, ".npm/_cacache/npmrc"),
		filepath.Join(home, ".cargo/registry/cache/creds"), filepath.Join(home, ".m2/repository/settings-link"))
	res, err := b.Run(context.Background(), Request{Workspace: ws, Argv: args})
	require.NoError(t, err)
	assert.NotContains(t, res.Stdout, "LEAK")
	assert.NotContains(t, res.Stdout, secret)
	assert.Contains(t, res.Stdout, "cache entry", "the caches themselves are readable")
}

// snapshot records every file under dir: its mode, size, time and content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		sig := fi.Mode().String() + " " + fi.ModTime().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sig += " " + string(b)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			sig += " -> " + l
		}
		out[p] = sig
		return nil
	}))
	return out
}

// TestHostCachesNeverWritten: a command tries to write, create, remove,
// rename and chmod in every host cache path it is shown; nothing of the
// host's changes.
func TestHostCachesNeverWritten(t *testing.T) {
	home, env, _ := fakeHome(t)
	b := newBwrap(t, Config{HostEnv: env}).(*bwrapSandbox)
	ws := polyglot(t)
	pr, err := b.prov.Plan(ws, provision.Want{}, nil)
	require.NoError(t, err)
	b.prov.Release(pr)
	require.NotEmpty(t, pr.ReadOnly)
	before := snapshot(t, home)

	script := `for d in "$@"; do
  touch "$d/new" 2>/dev/null && echo "WROTE $d/new"
  mkdir "$d/newdir" 2>/dev/null && echo "WROTE $d/newdir"
  find "$d" -type f | while read -r f; do
    echo poison >> "$f" 2>/dev/null && echo "WROTE $f"
    mv "$f" "$f.moved" 2>/dev/null && echo "WROTE moved $f"
    rm -f "$f" 2>/dev/null; [ -e "$f" ] || echo "WROTE removed $f"
  done
  chmod 777 "$d" 2>/dev/null && echo "WROTE chmod $d"
done
echo done`
	args := []string{"bash", "-c", script, "probe"}
	for _, p := range pr.ReadOnly {
		args = append(args, p.SandboxPath())
	}
	res, err := b.Run(context.Background(), Request{Workspace: ws, Argv: args})
	require.NoError(t, err)
	assert.Contains(t, res.Stdout, "done")
	assert.NotContains(t, res.Stdout, "WROTE")
	assert.Equal(t, before, snapshot(t, home), "the host's caches are unchanged")
}

// TestUntrustedCachesAreSkipped: a cache that is a symbolic link, owned by
// someone else, or writable by others is not mounted, and the provision
// says why.
func TestUntrustedCachesAreSkipped(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a cache another owner")
	}
	home, env, _ := fakeHome(t)
	// npm: the cache is a link to a directory elsewhere.
	elsewhere := t.TempDir()
	require.NoError(t, os.RemoveAll(filepath.Join(home, ".npm/_cacache")))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(home, ".npm/_cacache")))
	// Maven: owned by another user.
	require.NoError(t, os.Chown(filepath.Join(home, ".m2/repository"), 12345, 12345))
	// Go: writable by anyone.
	require.NoError(t, os.Chmod(filepath.Join(home, "go/pkg/mod/cache/download"), 0o777))

	b := newBwrap(t, Config{HostEnv: env}).(*bwrapSandbox)
	ws := polyglot(t)
	pr, err := b.prov.Plan(ws, provision.Want{}, nil)
	require.NoError(t, err)
	b.prov.Release(pr)
	skipped := map[string]string{}
	for _, s := range pr.Skipped {
		skipped[s.What] = s.Skip
	}
	assert.Contains(t, skipped["npm cache"], "symbolic link")
	assert.Contains(t, skipped["Maven repository"], "owned by uid 12345")
	assert.Contains(t, skipped["Go module cache"], "writable by others")
	for _, ro := range pr.ReadOnly {
		assert.NotContains(t, []string{"npm cache", "Maven repository", "Go module cache"}, ro.What, "%s is mounted", ro.Path)
	}
	lines := strings.Join(pr.Lines(), "\n")
	assert.Contains(t, lines, "not mounted: npm cache")
	assert.Contains(t, lines, "is owned by uid 12345")
}

// TestGitCommitsAsTheUser: git inside commits with the user's name and
// email, and sees nothing else of their git configuration (helpers,
// aliases, pager, hooks, includes) nor the system's.
func TestGitCommitsAsTheUser(t *testing.T) {
	home, env, _ := fakeHome(t)
	write(t, home, ".gitconfig", `[user]
	name = Ada \"the Countess\" Lovelace
	email = ada@example.com
[credential]
	helper = store
[alias]
	co = checkout
[core]
	pager = less
	hooksPath = /tmp/evil-hooks
[include]
	path = extra.gitconfig
`)
	write(t, home, "extra.gitconfig", "[url \"https://evil.example/\"]\n\tinsteadOf = https://github.com/\n")
	sb := newBwrap(t, Config{HostEnv: env})
	// The repository exists (no command may create .git in a workspace:
	// see protected.go).
	ws := t.TempDir()
	out, err := exec.Command("git", "init", "-q", ws).CombinedOutput()
	require.NoError(t, err, "%s", out)
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash(
		"echo hi > a && git add a && git commit -qm first && git log --format='%an <%ae> / %cn <%ce>' && echo ---- && git config --list --show-origin")})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr)
	assert.Contains(t, res.Stdout, `Ada "the Countess" Lovelace <ada@example.com> / Ada "the Countess" Lovelace <ada@example.com>`)
	_, cfg, _ := strings.Cut(res.Stdout, "----")
	for _, leaked := range []string{"credential", "alias", "pager", "hookspath", "insteadof", "include"} {
		assert.NotContains(t, strings.ToLower(cfg), leaked)
	}
}

// TestWorkspaceCachesAreNotShared: what one workspace's build writes into
// its caches, another workspace's command cannot see.
func TestWorkspaceCachesAreNotShared(t *testing.T) {
	sb := newBwrap(t, Config{})
	a, b := t.TempDir(), t.TempDir()
	ctx := context.Background()
	res, err := sb.Run(ctx, Request{Workspace: a, Argv: bash(`echo planted > "$GOCACHE/marker" && echo planted > "$npm_config_cache/marker" && echo "$GOCACHE"`)})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	assert.Equal(t, provision.CacheInside+"/go-build\n", res.Stdout)
	res, err = sb.Run(ctx, Request{Workspace: b, Argv: bash(`cat "$GOCACHE/marker" "$npm_config_cache/marker" 2>&1; ls /var/cache/custos/..`)})
	require.NoError(t, err)
	assert.NotContains(t, res.Stdout, "planted")
	res, err = sb.Run(ctx, Request{Workspace: a, Argv: bash(`cat "$GOCACHE/marker"`)})
	require.NoError(t, err)
	assert.Equal(t, "planted\n", res.Stdout, "a workspace finds its own cache again")
}

// TestGoToolchainFromModuleCache: a go.mod that asks for a newer Go than
// the sandbox's go finds that toolchain in the host's module cache, as the
// host's go does, offline.
func TestGoToolchainFromModuleCache(t *testing.T) {
	b := newBwrap(t, Config{}).(*bwrapSandbox)
	h := b.prov.Host
	if !h.LocalGoOK || len(h.GoToolchains) == 0 || !h.LocalGo.Less(h.GoToolchains[len(h.GoToolchains)-1].Version) {
		if os.Getenv("CI") != "" {
			t.Fatal("CI builds custos with a Go toolchain from the module cache newer than the installed go; none found")
		}
		t.Skip("no Go toolchain newer than the installed go in the module cache")
	}
	newest := h.GoToolchains[len(h.GoToolchains)-1]
	ws := t.TempDir()
	write(t, ws, "go.mod", "module example.com/m\n\ngo "+strings.TrimPrefix(newest.Name, "go")+"\n")
	res, err := b.Run(context.Background(), Request{Workspace: ws, Argv: bash("go version && go env GOROOT")})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr)
	assert.Contains(t, res.Stdout, "go version "+newest.Name+" ")
	assert.Contains(t, res.Stdout, newest.Dir)
	lines, err := Provisions(b, ws, Request{Workspace: ws})
	require.NoError(t, err)
	assert.Contains(t, strings.Join(lines, "\n"), "go: "+newest.Name+" from the module cache")
}

// TestRustFromRustup: where cargo is rustup's (a proxy in ~/.cargo/bin
// the sandbox does not show), the sandbox gets the rustup toolchain
// read-only, and `cargo test --offline` builds in the workspace with its
// own CARGO_HOME.
func TestRustFromRustup(t *testing.T) {
	b := newBwrap(t, Config{}).(*bwrapSandbox)
	ws := t.TempDir()
	write(t, ws, "Cargo.toml", "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n")
	write(t, ws, "src/lib.rs", "pub fn add(a: i32, b: i32) -> i32 { a + b }\n#[cfg(test)]\nmod tests { #[test] fn adds() { assert_eq!(super::add(2, 3), 5); } }\n")
	if name, _ := b.prov.Host.PickRust(ws); name == "" {
		t.Skip("no rustup toolchain on this machine")
	}
	res, err := b.Run(context.Background(), Request{Workspace: ws, Argv: bash("cargo test --offline 2>&1 && echo CARGO_HOME=$CARGO_HOME"), Timeout: 5 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "stdout: %s\nstderr: %s", res.Stdout, res.Stderr)
	assert.Contains(t, res.Stdout, "test tests::adds ... ok")
	assert.Contains(t, res.Stdout, "CARGO_HOME="+provision.CacheInside+"/cargo")
}

// TestProvisionsDescribesWithoutMaking: the description a job's first
// event and `sandbox check` show creates nothing; the first command makes
// the cache, and the description then shows it.
func TestProvisionsDescribesWithoutMaking(t *testing.T) {
	cache := t.TempDir()
	sb := newBwrap(t, Config{CacheDir: cache})
	ws := t.TempDir()
	lines, err := Provisions(sb, ws, Request{Workspace: ws})
	require.NoError(t, err)
	assert.Contains(t, strings.Join(lines, "\n"), "not made yet")
	assert.NoDirExists(t, provision.CacheDirFor(cache, ws))

	res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash("true")})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	assert.DirExists(t, provision.CacheDirFor(cache, ws))
	lines, err = Provisions(sb, ws, Request{Workspace: ws})
	require.NoError(t, err)
	assert.Contains(t, strings.Join(lines, "\n"), "as last measured")
}

// TestEtcPrivateStaysPrivate: what the bound /etc directories hold for
// their owner alone (a TLS key in /etc/ssl/private) is not readable inside,
// even when the worker is that owner; the certificates are.
func TestEtcPrivateStaysPrivate(t *testing.T) {
	fi, err := os.Stat("/etc/ssl/private")
	if err != nil || fi.Mode().Perm()&0o004 != 0 {
		t.Skip("no owner-only /etc/ssl/private here")
	}
	sb := newBwrap(t, Config{})
	res, err := sb.Run(context.Background(), Request{Workspace: t.TempDir(), Argv: bash(
		"ls -A /etc/ssl/private | wc -l; cat /etc/ssl/private/* 2>/dev/null | wc -c; test -r /etc/ssl/certs/ca-certificates.crt && echo certs")})
	require.NoError(t, err)
	assert.Equal(t, "0\n0\ncerts\n", res.Stdout, "stderr: %s", res.Stderr)
}

// TestPythonVenvFromAUserPython: a workspace venv made from a Python
// outside the system directories (pyenv's) runs inside: that Python is
// shown read-only; the venv's tests run with unittest.
func TestPythonVenvFromAUserPython(t *testing.T) {
	pythons, _ := filepath.Glob(filepath.Join(os.Getenv("HOME"), ".pyenv/versions/*/bin/python3"))
	if len(pythons) == 0 {
		t.Skip("no pyenv Python on this machine")
	}
	ws := t.TempDir()
	write(t, ws, "pyproject.toml", "[project]\nname = \"tiny\"\nversion = \"0.1\"\n")
	write(t, ws, "test_add.py", "import unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(1 + 2, 3)\n")
	out, err := exec.Command(pythons[0], "-m", "venv", "--without-pip", filepath.Join(ws, ".venv")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	sb := newBwrap(t, Config{})
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash(".venv/bin/python -m unittest -v 2>&1 && .venv/bin/python -c 'import sys; print(sys.base_prefix)'")})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "stdout: %s\nstderr: %s", res.Stdout, res.Stderr)
	assert.Contains(t, res.Stdout, "test_add (test_add.T")
	assert.Contains(t, res.Stdout, filepath.Dir(filepath.Dir(pythons[0])))
}

// The identity is read in one git run: the last of several values counts
// (as for git config --get), an included file counts, a missing key is
// empty, and none at all is no identity.
func TestGitIdentityRead(t *testing.T) {
	cases := []struct{ name, config, wantName, wantEmail string }{
		{"both", "[user]\n\tname = A\n\temail = a@x\n", "A", "a@x"},
		{"last value counts", "[user]\n\tname = First\n[user]\n\tname = Second\n", "Second", ""},
		{"email from an include", "[user]\n\tname = N\n[include]\n\tpath = more\n", "N", "m@x"},
		{"a value with a newline escape stays one value", "[user]\n\tname = \"L1\\nL2\"\n", "L1\nL2", ""},
		{"none", "[core]\n\tpager = less\n", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home, env, _ := fakeHome(t)
			write(t, home, ".gitconfig", tc.config)
			write(t, home, "more", "[user]\n\temail = m@x\n")
			name, email := (&provision.GitIdentity{Env: env}).Get()
			assert.Equal(t, tc.wantName, name)
			assert.Equal(t, tc.wantEmail, email)
		})
	}
}

// With a cache file (a process that runs one command), the identity one
// process read serves the next, without running git: for the same files
// unchanged, for an hour at most, and only from a file that is the user's
// own and that no one else may write. Anything else is read from git
// again.
func TestGitIdentityKept(t *testing.T) {
	home, env, _ := fakeHome(t)
	write(t, home, ".gitconfig", "[user]\n\tname = A\n\temail = a@x\n")
	cache := filepath.Join(t.TempDir(), "state", "id.json")
	name, email := (&provision.GitIdentity{Env: env, Cache: cache}).Get()
	require.Equal(t, "A", name)
	require.Equal(t, "a@x", email)
	fi, err := os.Stat(cache)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// keptAs rewrites the record to name someone git would not: a process
	// that returns that name did not run git.
	keptAs := func(mutate func(*provision.IdentityRecord)) {
		t.Helper()
		editRecord(t, cache, func(r *provision.IdentityRecord) {
			r.Name, r.At = "Kept", time.Now()
			if mutate != nil {
				mutate(r)
			}
		})
	}
	get := func() string {
		name, _ := (&provision.GitIdentity{Env: env, Cache: cache}).Get()
		return name
	}
	keptAs(nil)
	assert.Equal(t, "Kept", get(), "the same files unchanged: the record serves")

	cases := []struct {
		name, want string
		change     func()
	}{
		{"older than an hour", "A", func() { keptAs(func(r *provision.IdentityRecord) { r.At = time.Now().Add(-2 * time.Hour) }) }},
		{"its group may write it", "A", func() { keptAs(nil); require.NoError(t, os.Chmod(cache, 0o620)) }},
		{"anyone may write it", "A", func() { keptAs(nil); require.NoError(t, os.Chmod(cache, 0o602)) }},
		{"torn", "A", func() { require.NoError(t, os.WriteFile(cache, []byte("{"), 0o600)) }},
		{"a link", "A", func() {
			keptAs(nil)
			moved := cache + ".real"
			require.NoError(t, os.Rename(cache, moved))
			require.NoError(t, os.Symlink(moved, cache))
		}},
		{"the configuration changed", "B", func() {
			require.NoError(t, os.Remove(cache))
			get()
			keptAs(nil)
			write(t, home, ".gitconfig", "[user]\n\tname = B\n\temail = a@x\n")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if fi, err := os.Lstat(cache); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				require.NoError(t, os.Remove(cache))
			}
			tc.change()
			assert.Equal(t, tc.want, get())
		})
	}
}
