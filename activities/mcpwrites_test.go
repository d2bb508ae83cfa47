package activities

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/checkpoint"
	"github.com/custos-dev/custos/mcpservers"
)

// fsActivities are the MCP activities over a pool whose user settings
// name the official filesystem server "fs", writing a new git workspace.
func fsActivities(t *testing.T) (*MCP, string) {
	t.Helper()
	bin, err := exec.LookPath("mcp-server-filesystem")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mcp-server-filesystem not installed: make deps installs @modelcontextprotocol/server-filesystem")
		}
		t.Skip("mcp-server-filesystem not installed")
	}
	ws, user := t.TempDir(), t.TempDir()
	ws, _ = filepath.EvalSymlinks(ws)
	out, err := exec.Command("git", "init", "-q", ws).CombinedOutput()
	require.NoError(t, err, "%s", out)
	entry, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"fs": map[string]any{
		"command": bin, "args": []string{ws}, "writeWorkspace": true}}})
	require.NoError(t, os.MkdirAll(filepath.Join(user, "custos"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(user, "custos", "settings.json"), entry, 0o600))
	pool := &mcpservers.Pool{Sandbox: realSandbox(t), UserConfigDir: user, StateDir: t.TempDir()}
	t.Cleanup(pool.Close)
	return &MCP{Pool: pool}, ws
}

// A writing server's write is in the job's checkpoint under its call, and
// a rewind takes it back; what the host guard withholds is not applied
// and the model is told.
func TestWritingServerCallIsCheckpointed(t *testing.T) {
	m, ws := fsActivities(t)
	store := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("old\n"), 0o644))
	call := func(callID string, turn int, rel, content string) api.ToolResult {
		in, _ := json.Marshal(map[string]any{"path": filepath.Join(ws, rel), "content": content})
		res, err := m.Call(t.Context(), api.MCPCallRequest{Tool: "mcp__fs__write_file", ToolRequest: api.ToolRequest{
			JobID: "job-1", CallID: callID, Turn: turn, Workspace: ws, Checkpoints: store, Input: in}})
		require.NoError(t, err)
		return res
	}
	res := call("call_1", 1, "a.txt", "new\n")
	require.False(t, res.IsError, res.Output)
	got, _ := os.ReadFile(filepath.Join(ws, "a.txt"))
	assert.Equal(t, "new\n", string(got))

	s := checkpoint.Store{Dir: store}
	recs, err := s.Records("job-1")
	require.NoError(t, err)
	var changed []string
	for _, r := range recs {
		for _, c := range r.Changes {
			assert.Equal(t, "mcp__fs__write_file", r.Tool)
			changed = append(changed, c.Path)
		}
	}
	assert.Contains(t, changed, "a.txt")
	plan, err := s.PlanRewind("job-1", ws, 0)
	require.NoError(t, err)
	_, err = s.ApplyRewind(ws, plan, false)
	require.NoError(t, err)
	got, _ = os.ReadFile(filepath.Join(ws, "a.txt"))
	assert.Equal(t, "old\n", string(got), "the rewind restored it")

	res = call("call_2", 2, ".claude.json", "{}")
	assert.Contains(t, res.Output, "did not apply")
	assert.NotEmpty(t, res.HostConfig)
	_, err = os.Lstat(filepath.Join(ws, ".claude.json"))
	assert.True(t, os.IsNotExist(err), "withheld, not applied")
}
