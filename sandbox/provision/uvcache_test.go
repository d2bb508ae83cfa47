package provision

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/netpolicy"
)

// uvx and uv tool run are uv's tool runner; uv run and others are not.
func TestRunsUV(t *testing.T) {
	for argv, want := range map[string]bool{
		"uvx mcp-server-fetch": true, "/usr/local/bin/uvx x": true, "uv tool run x": true,
		"uv run x": false, "uv tool install x": false, "uv": false, "npx -y x": false, "": false,
	} {
		assert.Equal(t, want, RunsUV(splitArgs(argv)), argv)
	}
}

func splitArgs(s string) []string { return strings.Fields(s) }

// uv's cache is UV_CACHE_DIR, else $XDG_CACHE_HOME/uv, else ~/.cache/uv.
func TestUVCacheDir(t *testing.T) {
	vars := map[string]string{}
	env := HostEnv{Home: "/home/u", Getenv: func(k string) string { return vars[k] }}
	assert.Equal(t, "/home/u/.cache/uv", uvCache(env))
	vars["XDG_CACHE_HOME"] = "relative"
	assert.Equal(t, "/home/u/.cache/uv", uvCache(env), "a relative XDG_CACHE_HOME is ignored")
	vars["XDG_CACHE_HOME"] = "/xdg"
	assert.Equal(t, "/xdg/uv", uvCache(env))
	vars["UV_CACHE_DIR"] = "/uv-cache"
	assert.Equal(t, "/uv-cache", uvCache(env))
}

// Only one run of a server at a time has its overlay: another at once has
// its home's own cache, and the next, once the first is released, has it
// again; a server that does not run uv has none.
func TestServerUVCacheOneRunAtATime(t *testing.T) {
	host := t.TempDir()
	p := NewProvisioner(HostEnv{Home: t.TempDir(), Getenv: func(k string) string {
		if k == "UV_CACHE_DIR" {
			return host
		}
		return ""
	}}, "", Caches{})
	home := filepath.Join(t.TempDir(), "home")
	require.NoError(t, os.Mkdir(home, 0o700))
	uvx := []string{"uvx", "pkg"}
	first, err := p.PlanServer(home, netpolicy.Policy{}, uvx)
	require.NoError(t, err)
	require.NotNil(t, first.CacheOverlay)
	assert.Equal(t, host, first.CacheOverlay.Lower)
	assert.Equal(t, filepath.Join(filepath.Dir(home), UVLayers), first.CacheOverlay.Layers)
	assert.DirExists(t, filepath.Join(home, ".cache", "uv"), "the overlay's mount point")
	assert.Equal(t, "1", first.Env["UV_OFFLINE"])

	second, err := p.PlanServer(home, netpolicy.Policy{}, uvx)
	require.NoError(t, err)
	assert.Nil(t, second.CacheOverlay, "the layer is the first run's")
	require.Len(t, second.Skipped, 1)
	p.Release(second)

	p.Release(first)
	third, err := p.PlanServer(home, netpolicy.Policy{}, uvx)
	require.NoError(t, err)
	assert.NotNil(t, third.CacheOverlay)
	p.Release(third)

	other, err := p.PlanServer(home, netpolicy.Policy{}, []string{"node", "server.js"})
	require.NoError(t, err)
	assert.Nil(t, other.CacheOverlay)
}
