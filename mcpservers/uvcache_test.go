package mcpservers

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/internal/mcptest"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/sandbox/provision"
)

// standInUvx stands in for uv's tool runner: uv cannot be installed where
// custos is tested (PyPI is unreachable, and neither Debian nor npm
// carries it), so this script does to its cache what uv does: it reads
// an entry the cache holds, takes a lock at the cache's root (created and
// written), makes an environment under the cache and hard-links the
// cached file into it (uv's default link mode), then serves MCP (the test
// server).
const standInUvx = `#!/bin/bash
set -eu
c="$UV_CACHE_DIR"
cat "$c/archive-v0/$1/pkg.txt" >/dev/null
echo "$$" >"$c/.lock"
env="$c/environments-v2/$1-$(date +%s%N)"
mkdir -p "$env"
ln "$c/archive-v0/$1/pkg.txt" "$env/pkg.txt"
exec ./mcp-server
`

// uvRig is a rig whose worker's uv cache is UV_CACHE_DIR=cache, with the
// stand-in uvx in the workspace and an entry running it on package pkg.
func uvRig(t *testing.T, cache string) *rig {
	t.Helper()
	getenv := func(k string) string {
		if k == "UV_CACHE_DIR" {
			return cache
		}
		return os.Getenv(k)
	}
	r := &rig{ws: t.TempDir(), user: t.TempDir(), state: t.TempDir()}
	r.ws, _ = filepath.EvalSymlinks(r.ws)
	mcptest.Place(t, r.ws, "mcp-server")
	require.NoError(t, os.WriteFile(filepath.Join(r.ws, "uvx"), []byte(standInUvx), 0o755))
	r.writeUser(t, map[string]any{"mcpServers": map[string]any{"t": map[string]any{"command": "./uvx", "args": []string{"pkg"}}}})
	r.pool = &Pool{Sandbox: realSandboxWith(t, sandbox.Config{HostEnv: provision.HostEnv{Getenv: getenv}}), UserConfigDir: r.user, StateDir: r.state}
	t.Cleanup(r.pool.Close)
	return r
}

// treeState is every name under dir with its mode, size and modification
// time.
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		fi, err := d.Info()
		require.NoError(t, err)
		out[p] = fmt.Sprint(fi.Mode(), " ", fi.ModTime().Format(time.RFC3339Nano), " ", fi.Size())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			out[p] += " " + string(b)
		}
		return nil
	}))
	return out
}

// A uvx server reads the host's uv cache through an overlay: it reads
// the host's entries, its writes (uv's lock, environments, links) land in
// its own upper layer beside its home, the host's cache is left as it was,
// and a later start sees both its own earlier writes and what the host
// added since.
func TestUvxServerReadsTheHostCacheThroughAnOverlay(t *testing.T) {
	cache := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(cache, "archive-v0", "pkg"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cache, "archive-v0", "pkg", "pkg.txt"), []byte("from the host"), 0o644))
	r := uvRig(t, cache)
	before := treeState(t, cache)

	out, err := r.call(t, "read_file", map[string]string{"path": "/tmp/home/.cache/uv/archive-v0/pkg/pkg.txt"})
	require.NoError(t, err)
	assert.Equal(t, "from the host", out)
	_, err = r.call(t, "write_file", map[string]string{"path": "/tmp/home/.cache/uv/own.txt", "content": "mine"})
	require.NoError(t, err)

	upper := filepath.Join(filepath.Dir(HomeOf(r.state, r.ws, "t")), provision.UVLayers, "upper")
	assert.FileExists(t, filepath.Join(upper, ".lock"), "uv's lock lands in the server's upper layer")
	assert.FileExists(t, filepath.Join(upper, "own.txt"))
	envs, _ := filepath.Glob(filepath.Join(upper, "environments-v2", "pkg-*", "pkg.txt"))
	require.Len(t, envs, 1, "the environment and its link land in the upper layer")
	linked, err := os.ReadFile(envs[0])
	require.NoError(t, err)
	assert.Equal(t, "from the host", string(linked))
	assert.Equal(t, before, treeState(t, cache), "the host's uv cache is never written")

	// The host's uv adds an entry; the server starts again.
	require.NoError(t, os.MkdirAll(filepath.Join(cache, "archive-v0", "added"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cache, "archive-v0", "added", "pkg.txt"), []byte("added since"), 0o644))
	before = treeState(t, cache)
	r.pool.Close()
	r.pool = &Pool{Sandbox: r.pool.Sandbox, UserConfigDir: r.user, StateDir: r.state}
	t.Cleanup(r.pool.Close)
	out, err = r.call(t, "read_file", map[string]string{"path": "/tmp/home/.cache/uv/own.txt"})
	require.NoError(t, err)
	assert.Equal(t, "mine", out, "its own earlier write")
	out, err = r.call(t, "read_file", map[string]string{"path": "/tmp/home/.cache/uv/archive-v0/added/pkg.txt"})
	require.NoError(t, err)
	assert.Equal(t, "added since", out, "the host's entry added since")
	envs, _ = filepath.Glob(filepath.Join(upper, "environments-v2", "pkg-*", "pkg.txt"))
	assert.Len(t, envs, 2, "both starts' environments")
	assert.Equal(t, before, treeState(t, cache), "the host's uv cache is never written")
	assert.NoFileExists(t, filepath.Join(HomeOf(r.state, r.ws, "t"), ".cache", "uv", ".lock"), "not the home's own cache")
}

// Without a host uv cache, a uvx server runs from its home's own cache.
func TestUvxServerWithoutAHostCacheUsesItsHome(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "none")
	r := uvRig(t, cache)
	home := HomeOf(r.state, r.ws, "t")
	// What uv would have downloaded into the home's own cache earlier.
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".cache", "uv", "archive-v0", "pkg"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".cache", "uv", "archive-v0", "pkg", "pkg.txt"), []byte("downloaded"), 0o600))
	out, err := r.call(t, "echo", map[string]string{"text": "runs"})
	require.NoError(t, err)
	assert.Equal(t, "echo: runs", out)
	assert.FileExists(t, filepath.Join(home, ".cache", "uv", ".lock"), "uv's lock is in the home's own cache")
	envs, _ := filepath.Glob(filepath.Join(home, ".cache", "uv", "environments-v2", "pkg-*", "pkg.txt"))
	assert.Len(t, envs, 1)
	assert.NoDirExists(t, filepath.Join(filepath.Dir(home), provision.UVLayers), "no overlay without a host cache")
	assert.NoDirExists(t, cache)
}
