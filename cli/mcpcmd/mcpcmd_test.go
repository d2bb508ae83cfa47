package mcpcmd_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/cli/mcpcmd"
	"github.com/custos-dev/custos/internal/testenv"
)

// runMCP runs `starter mcp ARGS` as starter does (cli hands it to mcpcmd
// and ends as cmdline.Exit does): its exit code, stdout and stderr.
func runMCP(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	err := mcpcmd.Env{Stdout: &out, Stderr: &errb}.MCP(args)
	return cmdline.Exit(&errb, err), out.String(), errb.String()
}

func TestMCPListApproveRevoke(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	ws, cfg := testenv.Workspace(t), t.TempDir()
	write := func(content string) {
		require.NoError(t, os.WriteFile(filepath.Join(ws, ".mcp.json"), []byte(content), 0o644))
	}
	write(`{"mcpServers":{"db":{"command":"db-mcp","args":["--ro"],"env":{"DB_PASSWORD":"hunter2"}},"bad name":{"command":"x"}}}`)
	mcp := func(args ...string) (int, string, string) {
		return runMCP(append(args, "--workspace", ws, "--config-dir", cfg)...)
	}
	code, out, errOut := mcp("list")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "db               OFFERED db-mcp --ro; env DB_PASSWORD; no network")
	assert.Contains(t, out, "starter mcp approve db")
	assert.Contains(t, out, `server "bad name" left out`)
	assert.NotContains(t, out, "hunter2", "a secret's value is never shown")

	code, out, errOut = mcp("approve", "db")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `approved "db" as it is now`)
	_, out, _ = mcp("list")
	assert.Contains(t, out, "db               used    db-mcp --ro")

	// A changed secret is a changed entry.
	write(`{"mcpServers":{"db":{"command":"db-mcp","args":["--ro"],"env":{"DB_PASSWORD":"other"}}}}`)
	_, out, _ = mcp("list")
	assert.Contains(t, out, "OFFERED", "a change to an approved entry needs approval again")

	code, _, errOut = mcp("approve", "nope")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `no server "nope"`)
	code, _, _ = mcp("approve")
	assert.Equal(t, 2, code)

	code, out, _ = mcp("approve", "db")
	require.Equal(t, 0, code)
	code, out, errOut = mcp("revoke", "db")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "offered again")
	_, out, _ = mcp("list")
	assert.True(t, strings.Contains(out, "OFFERED"))
}
