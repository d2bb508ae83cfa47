package mcpservers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An unchanged set of files is not read again; any change to one of them
// (the user's settings, the workspace's settings, .mcp.json, the
// approvals) is seen on the next call, however small and however soon.
func TestLoadCacheSeesEveryChange(t *testing.T) {
	r := newRig(t, map[string]any{"mcpServers": map[string]any{"t": stdioServer(nil)}})
	settle := func() { time.Sleep(loadRacyWindow + 100*time.Millisecond) }
	servers := func() []string {
		t.Helper()
		cfg, err := r.pool.load(r.ws)
		require.NoError(t, err)
		var out []string
		for _, s := range cfg.Servers {
			out = append(out, s.Name+" "+s.Command)
		}
		return out
	}
	reads := func() int64 { return r.pool.loaded.reads.Load() }

	settle()
	assert.Equal(t, []string{"t ./mcp-server"}, servers())
	n := reads()
	assert.Equal(t, []string{"t ./mcp-server"}, servers())
	assert.Equal(t, n, reads(), "an unchanged set is served from the cache")

	// The same size, in place, at once: read again.
	r.writeUser(t, map[string]any{"mcpServers": map[string]any{"t": stdioServer(map[string]any{"command": "./mcp-serveR"})}})
	assert.Equal(t, []string{"t ./mcp-serveR"}, servers())
	// And again within the same tick of the clock (the racy window).
	r.writeUser(t, map[string]any{"mcpServers": map[string]any{"t": stdioServer(map[string]any{"command": "./mcp-servER"})}})
	assert.Equal(t, []string{"t ./mcp-servER"}, servers())

	// A .mcp.json entry appears offered, then approved, then revoked.
	settle()
	servers()
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"w": map[string]any{"command": "./mcp-server"}}})
	require.NoError(t, os.WriteFile(filepath.Join(r.ws, ".mcp.json"), b, 0o644))
	assert.Equal(t, []string{"t ./mcp-servER"}, servers(), "offered, not approved")
	_, pending, err := Load(r.user, r.state, r.ws)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	settle()
	servers()
	require.NoError(t, Approve(r.state, r.ws, pending[0]))
	assert.Equal(t, []string{"t ./mcp-servER", "w ./mcp-server"}, servers(), "approved: served at once")
	settle()
	servers()
	n = reads()
	servers()
	assert.Equal(t, n, reads())
	require.NoError(t, Revoke(r.state, r.ws, "w"))
	assert.Equal(t, []string{"t ./mcp-servER"}, servers(), "revoked: never called again")

	// The workspace's own settings, once the user trusts it.
	r.writeUser(t, map[string]any{"trustedWorkspaces": []string{r.ws}})
	settle()
	assert.Empty(t, servers())
	require.NoError(t, os.MkdirAll(filepath.Join(r.ws, ".custos"), 0o755))
	b, _ = json.Marshal(map[string]any{"mcpServers": map[string]any{"l": map[string]any{"command": "./mcp-server"}}})
	require.NoError(t, os.WriteFile(filepath.Join(r.ws, ".custos", "settings.local.json"), b, 0o644))
	assert.Equal(t, []string{"l ./mcp-server"}, servers())
}

// A set of files that changed within the racy window is read afresh until
// it settles (its timestamps' tick could hide a second change).
func TestLoadCacheRereadsARecentlyChangedSet(t *testing.T) {
	r := newRig(t, map[string]any{"mcpServers": map[string]any{"t": stdioServer(nil)}})
	_, err := r.pool.load(r.ws)
	require.NoError(t, err)
	n := r.pool.loaded.reads.Load()
	_, err = r.pool.load(r.ws)
	require.NoError(t, err)
	assert.Equal(t, n+1, r.pool.loaded.reads.Load(), "the user's settings were written just now")
}

// BenchmarkPoolLoad is what a call pays to know the workspace's servers:
// every file read and parsed (read) against an unchanged set (cached).
func BenchmarkPoolLoad(b *testing.B) {
	r := newRig(b, map[string]any{"mcpServers": map[string]any{"t": stdioServer(nil)}})
	time.Sleep(loadRacyWindow + 100*time.Millisecond)
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := Load(r.user, r.state, r.ws); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.pool.load(r.ws); err != nil {
				b.Fatal(err)
			}
		}
	})
}
