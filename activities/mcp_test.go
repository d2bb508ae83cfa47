package activities

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/checkpoint"
	"github.com/custos-dev/custos/internal/mcptest"
	"github.com/custos-dev/custos/mcpservers"
)

// mcpActivities are the MCP activities over a pool whose user settings
// name the test server "t", placed in a new workspace.
func mcpActivities(t *testing.T) (*MCP, string) {
	t.Helper()
	ws, user := t.TempDir(), t.TempDir()
	mcptest.Place(t, ws, "mcp-server")
	require.NoError(t, os.MkdirAll(filepath.Join(user, "custos"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(user, "custos", "settings.json"),
		[]byte(`{"mcpServers":{"t":{"command":"./mcp-server"}}}`), 0o600))
	pool := &mcpservers.Pool{Sandbox: realSandbox(t), UserConfigDir: user, StateDir: t.TempDir()}
	t.Cleanup(pool.Close)
	return &MCP{Pool: pool}, ws
}

func TestMCPCallResultsAndTheirCheckpointNote(t *testing.T) {
	m, ws := mcpActivities(t)
	store := t.TempDir()
	call := func(tool, args string) api.ToolResult {
		res, err := m.Call(t.Context(), api.MCPCallRequest{Tool: tool, ToolRequest: api.ToolRequest{
			JobID: "job-1", CallID: "call_1", Turn: 2, Workspace: ws, Checkpoints: store, Input: json.RawMessage(args), MaxOutput: 1000}})
		require.NoError(t, err)
		return res
	}
	assert.Equal(t, "echo: hi", call("mcp__t__echo", `{"text":"hi"}`).Output)
	big := call("mcp__t__big", `{"ms":50000}`)
	assert.True(t, big.Truncated, "a result is capped as every tool's is")
	assert.LessOrEqual(t, len(big.Output), 1000)
	failed := call("mcp__t__read_file", `{"path":"/etc/shadow"}`)
	assert.True(t, failed.IsError, "the server's error is a result for the model")
	assert.True(t, call("Read", `{}`).IsError, "not an MCP tool's name")

	recs, err := checkpoint.Store{Dir: store}.Records("job-1")
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	assert.Equal(t, 2, recs[0].Turn)
	assert.Empty(t, recs[0].Changes, "a server changes nothing in the workspace")
	require.NotEmpty(t, recs[0].Notes)
	assert.Contains(t, recs[0].Notes[0], "is not undone by a rewind")
}

func TestMCPToolsListingSaysWhenItIsTheSame(t *testing.T) {
	m, ws := mcpActivities(t)
	first, err := m.Tools(t.Context(), api.MCPToolsRequest{Workspace: ws})
	require.NoError(t, err)
	require.NotEmpty(t, first.Tools)
	again, err := m.Tools(t.Context(), api.MCPToolsRequest{Workspace: ws, Have: first.Hash})
	require.NoError(t, err)
	assert.True(t, again.Same)
	assert.Empty(t, again.Tools, "an unchanged listing does not travel again")
}
