package mcpservers

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/internal/mcptest"
	"github.com/custos-dev/custos/netpolicy"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/sandbox/hostfs"
)

// realSandbox is bubblewrap, as a worker has it.
func realSandbox(t testing.TB) sandbox.Sandbox {
	t.Helper()
	return realSandboxWith(t, sandbox.Config{})
}

// realSandboxWith is bubblewrap with cfg's settings.
func realSandboxWith(t testing.TB, cfg sandbox.Config) sandbox.Sandbox {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bwrap not installed: CI must run the real-sandbox tests")
		}
		t.Skip("bwrap not installed")
	}
	cache := t.TempDir()
	t.Cleanup(func() { _ = hostfs.RemoveAllWritable(cache) })
	cfg.FailIfUnavailable, cfg.CacheDir = true, cache
	sb, err := sandbox.New(cfg)
	require.NoError(t, err)
	return sb
}

// rig is a workspace with the test server in it, the user's settings
// naming it, and a pool.
type rig struct {
	ws, user, state string
	pool            *Pool
}

func newRig(t testing.TB, userSettings map[string]any) *rig {
	t.Helper()
	r := &rig{ws: t.TempDir(), user: t.TempDir(), state: t.TempDir()}
	r.ws, _ = filepath.EvalSymlinks(r.ws)
	mcptest.Place(t, r.ws, "mcp-server")
	r.writeUser(t, userSettings)
	r.pool = &Pool{Sandbox: realSandbox(t), UserConfigDir: r.user, StateDir: r.state}
	t.Cleanup(r.pool.Close)
	return r
}

func (r *rig) writeUser(t testing.TB, settings map[string]any) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(r.user, "custos"), 0o700))
	b, err := json.Marshal(settings)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(r.user, "custos", "settings.json"), b, 0o600))
}

func stdioServer(extra map[string]any) map[string]any {
	e := map[string]any{"command": "./mcp-server"}
	for k, v := range extra {
		e[k] = v
	}
	return e
}

func (r *rig) call(t *testing.T, tool string, args any) (string, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := r.pool.Call(context.Background(), r.ws, "t", tool, b, Limits{})
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

type toolError struct{ s string }

func (e *toolError) Error() string { return e.s }

func names(tools []Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.FullName)
	}
	return out
}

func TestStdioServerInTheSandbox(t *testing.T) {
	r := newRig(t, map[string]any{"mcpServers": map[string]any{"t": stdioServer(map[string]any{"env": map[string]string{"SERVER_TOKEN": "tok-123"}})}})
	tools, notes, err := r.pool.Tools(context.Background(), r.ws, Limits{})
	require.NoError(t, err)
	assert.Empty(t, notes)
	assert.Contains(t, names(tools), "mcp__t__echo")
	assert.Contains(t, names(tools), "mcp__t__write_file")
	for _, tl := range tools {
		switch tl.Name {
		case "echo":
			assert.True(t, tl.ReadOnly)
			assert.False(t, tl.Trusted, "a server is trusted only when the user's settings say so")
			assert.Contains(t, string(tl.InputSchema), `"text"`)
		case "write_file":
			assert.False(t, tl.ReadOnly)
			assert.True(t, tl.Destructive, "no annotation: destructive, as the spec says")
		}
	}
	out, err := r.call(t, "echo", map[string]string{"text": "hi"})
	require.NoError(t, err)
	assert.Equal(t, "echo: hi", out)

	out, err = r.call(t, "getenv", map[string]string{"name": "SERVER_TOKEN"})
	require.NoError(t, err)
	assert.Equal(t, "SERVER_TOKEN=tok-123", out, "the entry's env reaches its server")

	// The workspace is read-only to a server, and nothing of the sandbox's
	// is left in it while the server runs.
	_, err = r.call(t, "write_file", map[string]string{"path": "made.txt", "content": "ok"})
	var te *toolError
	require.ErrorAs(t, err, &te)
	_, err = os.Stat(filepath.Join(r.ws, "made.txt"))
	assert.True(t, os.IsNotExist(err))
	ents, err := os.ReadDir(r.ws)
	require.NoError(t, err)
	require.Len(t, ents, 1, "only the server's binary is in the workspace")
}

func TestStdioServerCannotGetOut(t *testing.T) {
	r := newRig(t, map[string]any{"mcpServers": map[string]any{"t": stdioServer(nil)}})
	outside := t.TempDir()
	key := filepath.Join(outside, ".ssh", "id_ed25519")
	require.NoError(t, os.MkdirAll(filepath.Dir(key), 0o700))
	require.NoError(t, os.WriteFile(key, []byte("PRIVATE KEY"), 0o600))
	home, _ := os.UserHomeDir()
	for _, p := range []string{key, "~/.ssh/id_ed25519", filepath.Join(home, ".ssh", "id_rsa"), "/etc/shadow", filepath.Join(r.state, approvalsFile)} {
		_, err := r.call(t, "read_file", map[string]string{"path": p})
		var te *toolError
		require.ErrorAs(t, err, &te, "reading %s must fail inside the sandbox", p)
	}
	for _, p := range []string{filepath.Join(outside, "planted"), "/etc/planted", filepath.Join(home, ".bashrc")} {
		_, err := r.call(t, "write_file", map[string]string{"path": p, "content": "x"})
		var te *toolError
		require.ErrorAs(t, err, &te, "writing %s must fail", p)
	}
	_, err := os.Stat(filepath.Join(outside, "planted"))
	assert.True(t, os.IsNotExist(err))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	for _, addr := range []string{ln.Addr().String(), "1.1.1.1:443", "localhost:22"} {
		_, err := r.call(t, "dial", map[string]string{"addr": addr})
		var te *toolError
		require.ErrorAs(t, err, &te, "no network for a server whose entry names no domains: %s", addr)
	}
}

func TestServerThatDiesIsStartedAgain(t *testing.T) {
	r := newRig(t, map[string]any{"mcpServers": map[string]any{"t": stdioServer(nil)}})
	_, err := r.call(t, "crash", map[string]any{})
	require.ErrorIs(t, err, ErrServerDied)
	out, err := r.call(t, "echo", map[string]string{"text": "again"})
	require.NoError(t, err)
	assert.Equal(t, "echo: again", out)
}

func TestToolListChangesReachTheNextListing(t *testing.T) {
	r := newRig(t, map[string]any{"mcpServers": map[string]any{"t": stdioServer(nil)}})
	tools, _, err := r.pool.Tools(context.Background(), r.ws, Limits{})
	require.NoError(t, err)
	assert.NotContains(t, names(tools), "mcp__t__fresh")
	_, err = r.call(t, "grow", map[string]string{"text": "fresh"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		tools, _, err = r.pool.Tools(context.Background(), r.ws, Limits{})
		return err == nil && strings.Contains(strings.Join(names(tools), " "), "mcp__t__fresh")
	}, 5e9, 1e8)
}

func TestWorkspaceServersNeedApprovalAndTrust(t *testing.T) {
	r := newRig(t, map[string]any{})
	mcpJSON := func(args ...string) {
		b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"t": map[string]any{"command": "./mcp-server", "args": args}}})
		require.NoError(t, os.WriteFile(filepath.Join(r.ws, ".mcp.json"), b, 0o644))
	}
	mcpJSON()
	cfg, pending, err := Load(r.user, r.state, r.ws)
	require.NoError(t, err)
	assert.Empty(t, cfg.Servers, "offered, never started silently")
	require.Len(t, pending, 1)
	assert.Contains(t, strings.Join(cfg.Notes, "\n"), "starter mcp approve t")
	tools, _, err := r.pool.Tools(context.Background(), r.ws, Limits{})
	require.NoError(t, err)
	assert.Empty(t, tools)

	require.NoError(t, Approve(r.state, r.ws, pending[0]))
	tools, _, err = r.pool.Tools(context.Background(), r.ws, Limits{})
	require.NoError(t, err)
	assert.Contains(t, names(tools), "mcp__t__echo")

	mcpJSON("--changed") // any change to the entry needs approval again
	cfg, pending, err = Load(r.user, r.state, r.ws)
	require.NoError(t, err)
	assert.Empty(t, cfg.Servers)
	assert.Len(t, pending, 1)
	_, err = r.call(t, "echo", map[string]string{"text": "x"})
	require.Error(t, err, "a changed entry's server is not called")

	// A workspace's own custos settings: ignored unless the user trusts it,
	// and "trusted" never honoured from there.
	require.NoError(t, os.MkdirAll(filepath.Join(r.ws, ".custos"), 0o755))
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"w": map[string]any{"command": "./mcp-server"}}})
	require.NoError(t, os.WriteFile(filepath.Join(r.ws, ".custos", "settings.json"), b, 0o644))
	cfg, _, err = Load(r.user, r.state, r.ws)
	require.NoError(t, err)
	assert.Empty(t, cfg.Servers)
	assert.Contains(t, strings.Join(cfg.Notes, "\n"), "not trusted")
	b, _ = json.Marshal(map[string]any{"mcpServers": map[string]any{"w": map[string]any{"command": "./mcp-server", "trusted": true}}})
	require.NoError(t, os.WriteFile(filepath.Join(r.ws, ".custos", "settings.json"), b, 0o644))
	r.writeUser(t, map[string]any{"trustedWorkspaces": []string{r.ws}})
	cfg, _, err = Load(r.user, r.state, r.ws)
	require.NoError(t, err)
	assert.Empty(t, cfg.Servers)
	assert.Contains(t, strings.Join(cfg.Notes, "\n"), `"trusted" is honoured only in the user's own settings`)
}

func TestBrokenEntriesAreNamedAndTheRestServe(t *testing.T) {
	r := newRig(t, map[string]any{"mcpServers": map[string]any{
		"t":        stdioServer(nil),
		"bad__one": stdioServer(nil),
		"typo":     map[string]any{"command": "./mcp-server", "domians": []string{"x.com"}},
		"both":     map[string]any{"command": "./mcp-server", "url": "http://x"},
		"missing":  map[string]any{"command": "./no-such-server"},
	}})
	tools, notes, err := r.pool.Tools(context.Background(), r.ws, Limits{})
	require.NoError(t, err)
	assert.Contains(t, names(tools), "mcp__t__echo")
	all := strings.Join(notes, "\n")
	for _, want := range []string{`"bad__one" left out`, `"typo" left out`, `unknown field "domians"`, `"both" left out`, `"missing"`} {
		assert.Contains(t, all, want)
	}
}

func TestHTTPServerOnlyThroughTheDomainPolicy(t *testing.T) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewServer() }, nil)
	var gotAuth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		gotAuth.Store(req.Header.Get("Authorization"))
		h.ServeHTTP(w, req)
	}))
	defer srv.Close()
	t.Setenv("CUSTOS_TEST_MCP_TOKEN", "s3cret")
	r := newRig(t, map[string]any{"mcpServers": map[string]any{"t": map[string]any{"type": "http", "url": srv.URL,
		"headers": map[string]string{"Authorization": "Bearer ${CUSTOS_TEST_MCP_TOKEN}"}}}})
	defer r.pool.Close() // before the server closes, which waits for its streams

	_, notes, err := r.pool.Tools(context.Background(), r.ws, Limits{})
	require.NoError(t, err)
	assert.Contains(t, strings.Join(notes, "\n"), "not among the allowed domains")

	allowed := Limits{Network: netpolicy.Policy{AllowedDomains: []string{"127.0.0.1"}, AllowLocalBinding: true}}
	tools, notes, err := r.pool.Tools(context.Background(), r.ws, allowed)
	require.NoError(t, err)
	require.Empty(t, notes)
	assert.Contains(t, names(tools), "mcp__t__echo")
	res, err := r.pool.Call(context.Background(), r.ws, "t", "echo", json.RawMessage(`{"text":"over http"}`), allowed)
	require.NoError(t, err)
	assert.Equal(t, "echo: over http", res.Content[0].(*mcp.TextContent).Text)
	assert.Equal(t, "Bearer s3cret", gotAuth.Load(), "the entry's headers, expanded, reach its server")
}
