package provision

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
