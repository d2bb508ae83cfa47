package provision

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/sysview"
	"github.com/custos-dev/custos/toolchains"
)

func TestParseGoVersion(t *testing.T) {
	order := []string{"1.21", "1.21.0", "go1.22rc1", "1.22rc2", "1.22", "1.22.1", "go1.27.3", "1.100.0"}
	for i := 1; i < len(order); i++ {
		a, okA := parseGoVersion(order[i-1])
		b, okB := parseGoVersion(order[i])
		require.True(t, okA && okB, "%s, %s", order[i-1], order[i])
		assert.False(t, b.Less(a), "%s < %s", order[i], order[i-1])
	}
	one, _ := parseGoVersion("1.21")
	zero, _ := parseGoVersion("1.21.0")
	assert.False(t, one.Less(zero) || zero.Less(one), "1.21 is 1.21.0")
	for _, bad := range []string{"", "go", "1", "1.x", "1.2.3.4", "1.22rcx", "-1.2"} {
		_, ok := parseGoVersion(bad)
		assert.False(t, ok, bad)
	}
}

func TestGoModRequires(t *testing.T) {
	cases := []struct{ name, gomod, gowork, want string }{
		{"go line", "module m\n\ngo 1.22\n", "", "1.22"},
		{"toolchain line wins when higher", "module m\n\ngo 1.22\ntoolchain go1.27.3\n", "", "1.27.3"},
		{"go line wins when higher", "module m\n\ngo 1.26.10\ntoolchain go1.26.1\n", "", "1.26.10"},
		{"go.work first", "module m\n\ngo 1.22\n", "go 1.27.3\n\nuse .\n", "1.27.3"},
		{"none", "module m\n", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			put(t, ws, "go.mod", c.gomod)
			if c.gowork != "" {
				put(t, ws, "go.work", c.gowork)
			}
			v, ok := goModRequires(ws)
			if c.want == "" {
				assert.False(t, ok)
				return
			}
			want, _ := parseGoVersion(c.want)
			assert.True(t, ok)
			assert.Equal(t, want, v)
		})
	}
}

func TestDetectToolchains(t *testing.T) {
	ws := t.TempDir()
	put(t, ws, "go.mod", "module m\n")
	put(t, ws, "web/package.json", "{}")
	put(t, ws, "node_modules/dep/Cargo.toml", "")                     // a dependency's, not the workspace's
	put(t, ws, ".hidden/pom.xml", "")                                 // tool state
	put(t, ws, "svc/deep/pyproject.toml", "")                         // too deep
	require.NoError(t, os.Mkdir(filepath.Join(ws, "pom.xml"), 0o755)) // not a file
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(ws, "Cargo.toml")))

	assert.Equal(t, []Detected{{toolchains.Go, "go.mod"}, {toolchains.Node, "web/package.json"}}, DetectToolchains(ws, nil, false))
	assert.Equal(t, []Detected{{toolchains.Node, "web/package.json"}}, DetectToolchains(ws, []string{"node", "rust"}, true))
	assert.Empty(t, DetectToolchains(ws, []string{}, true), "an empty list turns detection off")

	// Below the root: the first directory in name order, and in it the
	// first of the tool's marker names; a link is no marker, there either.
	put(t, ws, "b-svc/setup.py", "")
	put(t, ws, "b-svc/pyproject.toml", "")
	put(t, ws, "a-svc/requirements.txt", "")
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(ws, "a-svc/pom.xml")))
	// A directory too large to be listed for markers: they are looked up.
	for i := range maxMarkerListing + 1 {
		put(t, ws, fmt.Sprintf("z-big/f%d", i), "")
	}
	put(t, ws, "z-big/Cargo.toml", "")
	assert.Equal(t, []Detected{{toolchains.Go, "go.mod"}, {toolchains.Node, "web/package.json"}, {toolchains.Python, "a-svc/requirements.txt"}, {toolchains.Rust, "z-big/Cargo.toml"}},
		DetectToolchains(ws, nil, false))
	require.NoError(t, os.Remove(filepath.Join(ws, "a-svc/requirements.txt")))
	assert.Equal(t, []Detected{{toolchains.Python, "b-svc/pyproject.toml"}}, DetectToolchains(ws, []string{"python"}, true))
}

func TestPickGoToolchain(t *testing.T) {
	v := func(s string) goVersion { x, _ := parseGoVersion(s); return x }
	h := &hostToolchains{LocalGo: v("1.26.8"), LocalGoOK: true, GoToolchains: []goToolchain{
		{v("1.26.10"), "go1.26.10", "/m/a"}, {v("1.27.3"), "go1.27.3", "/m/b"},
	}}
	assert.Nil(t, h.pickGoToolchain(v("1.22")), "the sandbox's go is new enough")
	assert.Nil(t, h.pickGoToolchain(v("1.26.8")))
	assert.Equal(t, "go1.26.10", h.pickGoToolchain(v("1.26.9")).Name, "the oldest that is new enough")
	assert.Equal(t, "go1.27.3", h.pickGoToolchain(v("1.27")).Name)
	assert.Nil(t, h.pickGoToolchain(v("1.28")), "none here: the go command says what it needs")
}

func TestCacheLocationsFollowConfiguration(t *testing.T) {
	home := t.TempDir()
	vars := map[string]string{}
	env := HostEnv{Home: home, Getenv: func(k string) string { return vars[k] }}

	assert.Equal(t, filepath.Join(home, "go/pkg/mod"), goModCache(env), "default")
	put(t, home, ".config/go/env", "GOPATH=/opt/gopath:/other\n")
	assert.Equal(t, "/opt/gopath/pkg/mod", goModCache(env), "go env -w GOPATH")
	put(t, home, ".config/go/env", "GOMODCACHE=/srv/modcache\n")
	assert.Equal(t, "/srv/modcache", goModCache(env), "go env -w GOMODCACHE")
	vars["GOMODCACHE"] = "/env/modcache"
	assert.Equal(t, "/env/modcache", goModCache(env), "the variable beats the file")

	assert.Equal(t, filepath.Join(home, ".npm"), npmCache(env))
	put(t, home, ".npmrc", "//registry.example/:_authToken=x\ncache = ~/npm-cache\n")
	assert.Equal(t, filepath.Join(home, "npm-cache"), npmCache(env))
	vars["npm_config_cache"] = "/env/npm"
	assert.Equal(t, "/env/npm", npmCache(env))

	assert.Equal(t, filepath.Join(home, ".m2/repository"), mavenRepo(env))
	put(t, home, ".m2/settings.xml", "<settings><localRepository>${user.home}/m2repo</localRepository></settings>")
	assert.Equal(t, filepath.Join(home, "m2repo"), mavenRepo(env))
}

func TestGitconfigText(t *testing.T) {
	assert.Equal(t, "# custos: the user's git identity; nothing else of their git configuration\n[user]\n\tname = \"A \\\"B\\\" C\\\\D\"\n\temail = \"a@b\"\n",
		gitconfigText(`A "B" C\D`, "a@b"))
	got := gitconfigText("evil\n[core]\n\thooksPath = /x", "a@b")
	assert.NotContains(t, got, "hooksPath", "a value with a newline is left out, not injected")
	assert.Contains(t, got, "email")
}

// TestCacheEviction: past the cap whole workspace caches go, least
// recently used first; one a command holds stays; a cleared cache with
// the read-only module directories go leaves is gone.
func TestCacheEviction(t *testing.T) {
	root := t.TempDir()
	c := newWSCaches(root, 0) // no eviction in the background: the test evicts

	fill := func(ws string, used time.Time) string {
		w, err := c.open(ws)
		require.NoError(t, err)
		put(t, filepath.Join(w.dir, "cache", "go-build"), "blob", strings.Repeat("x", 700<<10))
		c.release(w)
		require.NoError(t, os.Chtimes(filepath.Join(w.dir, "used"), used, used))
		require.NoError(t, hostfs.WriteIfChanged(filepath.Join(w.dir, "size"), "716800"))
		return w.dir
	}
	now := time.Now()
	oldest := fill("/ws/oldest", now.Add(-3*time.Hour))
	held := fill("/ws/held", now.Add(-2*time.Hour))
	newest := fill("/ws/newest", now.Add(-1*time.Hour))
	lock, err := lockCache(held)
	require.NoError(t, err)
	defer lock.lock.Close()

	evict(root, 1<<20)
	assert.NoDirExists(t, oldest, "least recently used: evicted")
	assert.DirExists(t, held, "in use: kept, though older")
	assert.NoDirExists(t, newest, "still over the cap with the held one kept")

	infos, err := ListCaches(root)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	assert.Equal(t, "/ws/held", infos[0].Workspace)
	assert.Equal(t, int64(700<<10), infos[0].Bytes)

	// Clearing waits for the holder; a module directory go made read-only
	// does not stop it.
	ro := filepath.Join(held, "cache", "go-mod", "example.com", "m@v1")
	put(t, ro, "go.mod", "module m\n")
	require.NoError(t, os.Chmod(ro, 0o555))
	done := make(chan error)
	go func() { _, err := ClearCache(root, "/ws/held"); done <- err }()
	select {
	case <-done:
		t.Fatal("cleared a cache a command holds")
	case <-time.After(200 * time.Millisecond):
	}
	lock.lock.Close()
	require.NoError(t, <-done)
	assert.NoDirExists(t, held)
	removed, err := ClearCache(root, "/ws/held")
	require.NoError(t, err)
	assert.False(t, removed)
}

// A measurement evicts only when it finds the workspace's cache grown: the
// total passes the cap only by growth, and a measurement that finds none
// reads no other workspace's record.
func TestCacheEvictionOnGrowth(t *testing.T) {
	root := t.TempDir()
	setup := newWSCaches(root, 0)
	fill := func(ws string, kib int, used time.Time) string {
		w, err := setup.open(ws)
		require.NoError(t, err)
		put(t, filepath.Join(w.dir, "cache", "go-build"), "blob", strings.Repeat("x", kib<<10))
		setup.release(w)
		setup.Busy.Wait()
		require.NoError(t, os.Chtimes(filepath.Join(w.dir, "used"), used, used))
		require.NoError(t, hostfs.WriteIfChanged(filepath.Join(w.dir, "size"), strconv.Itoa(kib<<10)))
		return w.dir
	}
	now := time.Now()
	other := fill("/ws/other", 900, now.Add(-3*time.Hour))
	mine := fill("/ws/mine", 200, now.Add(-time.Hour))
	c := newWSCaches(root, 1<<20) // 1.1 MiB held against a 1 MiB cap

	c.measureAndEvict(mine)
	assert.DirExists(t, other, "no growth: nothing evicted")

	put(t, filepath.Join(mine, "cache", "go-build"), "more", strings.Repeat("x", 10<<10))
	c.measureAndEvict(mine)
	assert.NoDirExists(t, other, "grown past the cap: the least recently used goes")
	assert.DirExists(t, mine)
}

// TestCacheDirNotTrusted: a cache directory that is a symbolic link is not
// used; the run goes on with throw-away caches and says why.
func TestCacheDirNotTrusted(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cache")
	require.NoError(t, os.Symlink(t.TempDir(), root))
	p := &Provisioner{Host: &hostToolchains{}, Caches: newWSCaches(root, 0), git: &GitIdentity{Env: HostEnv{Home: t.TempDir()}}}
	pr, err := p.Plan("/ws", Want{}, nil)
	require.NoError(t, err)
	assert.Empty(t, pr.CacheDir)
	assert.Contains(t, pr.CacheWhy, "symbolic link")
	assert.Equal(t, sysview.Tmp+"/go-build", pr.Env["GOCACHE"])
	assert.Contains(t, strings.Join(pr.Lines(), "\n"), "none kept")
}

// TestCacheFullDisk: a full disk is said as such.
func TestCacheFullDisk(t *testing.T) {
	err := cacheErr("/state/x", &os.PathError{Op: "mkdir", Path: "/state/x", Err: syscall.ENOSPC})
	assert.Contains(t, err.Error(), "is full (no space left on device)")
	assert.Contains(t, err.Error(), "starter sandbox cache --clear")
}

// put makes dir/name with data, and the directories on the way.
func put(t testing.TB, dir, name, data string) {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
}
