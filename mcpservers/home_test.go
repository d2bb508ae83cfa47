package mcpservers

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/retention"
)

// callOn calls a tool of the server named server and returns its text.
func (r *rig) callOn(t testing.TB, server, tool string, args any) (string, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := r.pool.Call(context.Background(), r.ws, server, tool, b, Limits{})
	if err != nil {
		return "", err
	}
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	if res.IsError {
		return "", &toolError{strings.Join(out, "\n")}
	}
	return strings.Join(out, "\n"), nil
}

// memoryServer is the official memory server installed globally from npm
// (make deps installs it).
func memoryServer(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("mcp-server-memory")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mcp-server-memory not installed: make deps installs @modelcontextprotocol/server-memory")
		}
		t.Skip("mcp-server-memory not installed (npm install -g @modelcontextprotocol/server-memory)")
	}
	return bin
}

var entity = map[string]any{"entities": []map[string]any{{"name": "custos", "entityType": "project", "observations": []string{"runs servers in a sandbox"}}}}

// The official memory server keeps what it is told: in a later call, and
// after its session restarts in a new pool, in its home under the state
// directory, which du counts.
func TestMemoryServerKeepsWhatItWasTold(t *testing.T) {
	bin := memoryServer(t)
	servers := map[string]any{"mcpServers": map[string]any{"memory": map[string]any{
		"command": bin, "env": map[string]string{"MEMORY_FILE_PATH": "${HOME}/memory.jsonl"}}}}
	r := newRig(t, servers)
	_, err := r.callOn(t, "memory", "create_entities", entity)
	require.NoError(t, err)
	out, err := r.callOn(t, "memory", "read_graph", map[string]any{})
	require.NoError(t, err)
	assert.Contains(t, out, "runs servers in a sandbox")

	r.pool.Close()
	r.pool = &Pool{Sandbox: r.pool.Sandbox, UserConfigDir: r.user, StateDir: r.state}
	t.Cleanup(r.pool.Close)
	out, err = r.callOn(t, "memory", "read_graph", map[string]any{})
	require.NoError(t, err)
	assert.Contains(t, out, "runs servers in a sandbox", "the graph outlives the session")

	home := HomeOf(r.state, r.ws, "memory")
	assert.True(t, strings.HasPrefix(home, r.state+string(filepath.Separator)))
	data, err := os.ReadFile(filepath.Join(home, "memory.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"custos"`)
	u, err := retention.Measure(r.state, true)
	require.NoError(t, err)
	require.Len(t, u.Workspaces, 1)
	assert.Equal(t, r.ws, u.Workspaces[0].Workspace)
	assert.GreaterOrEqual(t, u.Workspaces[0].Bytes[retention.ServerHomes], int64(len(data)))
}

// warmNpmCache puts the memory server and its dependencies in the host's
// npm cache, as a user's earlier npx or install would have.
func warmNpmCache(t testing.TB) string {
	t.Helper()
	for _, args := range [][]string{
		{"cache", "add", "@modelcontextprotocol/server-memory"},
		{"install", "--no-save", "--no-audit", "--no-fund", "--prefer-offline", "--prefix", t.TempDir(), "@modelcontextprotocol/server-memory"},
	} {
		out, err := exec.Command("npm", args...).CombinedOutput()
		require.NoError(t, err, "npm %v: %s", args, out)
	}
	out, err := exec.Command("npm", "config", "get", "cache").Output()
	require.NoError(t, err)
	return filepath.Join(strings.TrimSpace(string(out)), "_cacache")
}

// newestIn is the newest modification time of the files under dir.
func newestIn(t testing.TB, dir string) (time.Time, int) {
	t.Helper()
	var newest time.Time
	n := 0
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
		n++
		return nil
	}))
	return newest, n
}

// npx -y PACKAGE starts offline from the host's npm cache, which it never
// writes; the package lands in the server's home, so what the memory
// server keeps beside its script stays too.
func TestNpxServerOfflineFromTheHostCache(t *testing.T) {
	if _, err := exec.LookPath("npx"); err != nil {
		t.Fatal("npx not installed: .ci/run installs npm")
	}
	cache := warmNpmCache(t)
	before, files := newestIn(t, cache)
	r := newRig(t, map[string]any{"mcpServers": map[string]any{"memory": map[string]any{
		"command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-memory"}}}})
	_, err := r.callOn(t, "memory", "create_entities", entity)
	require.NoError(t, err)
	r.pool.Close()
	r.pool = &Pool{Sandbox: r.pool.Sandbox, UserConfigDir: r.user, StateDir: r.state}
	t.Cleanup(r.pool.Close)
	out, err := r.callOn(t, "memory", "read_graph", map[string]any{})
	require.NoError(t, err)
	assert.Contains(t, out, "runs servers in a sandbox")

	after, filesAfter := newestIn(t, cache)
	assert.Equal(t, before, after, "the host's npm cache is never written")
	assert.Equal(t, files, filesAfter)
	found, _ := filepath.Glob(filepath.Join(HomeOf(r.state, r.ws, "memory"), ".npm", "_npx", "*", "node_modules", "@modelcontextprotocol", "server-memory", "dist", "memory.jsonl"))
	assert.Len(t, found, 1, "npx installed the server into its home")
}

// A server writes its home and nothing else: the workspace stays
// read-only, the host's home is unseen, and links it leaves in its home
// lead custos' own steps there (emptying TMPDIR, seeding npm's index)
// nowhere outside it.
func TestServerWritesOnlyItsHome(t *testing.T) {
	r := newRig(t, map[string]any{"mcpServers": map[string]any{"t": stdioServer(nil)}})
	for name, want := range map[string]string{"HOME": "/tmp/home", "TMPDIR": "/tmp/home/.tmp",
		"XDG_DATA_HOME": "/tmp/home/.local/share", "XDG_CONFIG_HOME": "/tmp/home/.config",
		"XDG_CACHE_HOME": "/tmp/home/.cache", "XDG_STATE_HOME": "/tmp/home/.local/state"} {
		out, err := r.call(t, "getenv", map[string]string{"name": name})
		require.NoError(t, err)
		assert.Equal(t, name+"="+want, out)
	}
	_, err := r.call(t, "write_file", map[string]string{"path": "/tmp/home/.local/share/kept.txt", "content": "kept"})
	require.NoError(t, err)
	home := HomeOf(r.state, r.ws, "t")
	got, err := os.ReadFile(filepath.Join(home, ".local/share/kept.txt"))
	require.NoError(t, err)
	assert.Equal(t, "kept", string(got))

	hostHome, _ := os.UserHomeDir()
	for _, p := range []string{filepath.Join(r.ws, "made.txt"), filepath.Join(r.state, "planted"), filepath.Join(hostHome, ".custos-planted"), "/usr/planted"} {
		_, err := r.call(t, "write_file", map[string]string{"path": p, "content": "x"})
		var te *toolError
		require.ErrorAs(t, err, &te, "writing %s must fail", p)
		assert.NoFileExists(t, p)
	}
	_, err = r.call(t, "read_file", map[string]string{"path": filepath.Join(hostHome, ".npmrc")})
	var te *toolError
	require.ErrorAs(t, err, &te, "the host's home is unseen")

	// Links left in the home, to a host directory, as a server could.
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "keep"), []byte("k"), 0o600))
	require.NoError(t, os.RemoveAll(filepath.Join(home, ".tmp")))
	require.NoError(t, os.Symlink(outside, filepath.Join(home, ".tmp")))
	require.NoError(t, os.RemoveAll(filepath.Join(home, ".npm")))
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".npm"), 0o700))
	require.NoError(t, os.Symlink(outside, filepath.Join(home, ".npm", "_cacache")))
	r.pool.Close()
	out, err := r.call(t, "echo", map[string]string{"text": "again"})
	require.NoError(t, err)
	assert.Equal(t, "echo: again", out)
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Len(t, ents, 1, "nothing written outside the home")
	assert.Equal(t, "keep", ents[0].Name())
}

// writeWorkspace is true or false, for a stdio server only; an entry
// that asks for it needs another approval than one that does not; its
// tools are never read-only to layer 2, whatever their hints.
func TestWriteWorkspaceEntries(t *testing.T) {
	r := newRig(t, map[string]any{"mcpServers": map[string]any{
		"w":    stdioServer(map[string]any{"writeWorkspace": true, "trusted": true}),
		"web":  map[string]any{"url": "https://x.example/mcp", "writeWorkspace": true},
		"half": stdioServer(map[string]any{"writeWorkspace": "yes"}),
	}})
	tools, notes, err := r.pool.Tools(context.Background(), r.ws, Limits{})
	require.NoError(t, err)
	require.Len(t, notes, 2, "%q", notes)
	joined := strings.Join(notes, "\n")
	assert.Contains(t, joined, `"writeWorkspace" is for a stdio server`)
	assert.Contains(t, joined, `"writeWorkspace" is true or false`)
	require.NotEmpty(t, tools)
	for _, tool := range tools {
		assert.Equal(t, "w", tool.Server)
		assert.False(t, tool.ReadOnly, tool.Name)
		assert.True(t, tool.Destructive, tool.Name)
	}
	plain := Server{Type: "stdio", Command: "x"}
	writing := plain
	writing.WriteWorkspace = true
	assert.NotEqual(t, plain.Fingerprint(), writing.Fingerprint())
}
