package activities

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/sandbox/hostguard"
)

// A command that plants a repository with config the host's git would run
// gets a result that tells the model what custos neutralised (a status line,
// never cut with the output), and carries it for the job's record; a
// failing command's deny-rules note still comes.
func TestBashHostConfigNote(t *testing.T) {
	tools := &Tools{Sandbox: realSandbox(t)}
	ws := t.TempDir()
	in, _ := json.Marshal(map[string]string{"command": "git init -q sub && git -C sub config core.fsmonitor 'sh -c id' && head -c 200000 /dev/zero | tr '\\0' y; exit 3"})
	res, err := tools.Bash(t.Context(), api.ToolRequest{Workspace: ws, Input: in, MaxOutput: 2000, EditDeny: []string{"secret"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Output, "[host config: custos neutralised")
	require.Contains(t, res.Output, "sub/.git/config (git config): stripped of core.fsmonitor")
	require.Contains(t, res.Output, "[note: "+denyRulesNote+"]")
	require.LessOrEqual(t, len(res.Output), 2000)
	require.NotEmpty(t, res.HostConfig)
	require.Equal(t, "sub/.git/config (git config): stripped of core.fsmonitor", res.HostConfig[0])
	require.True(t, strings.HasPrefix(res.HostConfig[1], "kept in "), res.HostConfig)
	cfg, err := os.ReadFile(filepath.Join(ws, "sub", ".git", "config"))
	require.NoError(t, err)
	require.NotContains(t, string(cfg), "fsmonitor")
}

func TestFormatBashResultHostConfig(t *testing.T) {
	res := sandbox.Result{Stdout: "x\n", Report: hostguard.Report{HostConfig: []hostguard.Change{{Path: "a/.git/hooks/pre-commit", What: "git hook", Action: "set aside"}}}}
	out := commandResult(res, nil, 1000, false)
	require.Contains(t, out.Output, "\n[host config: custos neutralised what this call left for tools on the host to run")
	require.Equal(t, []string{"a/.git/hooks/pre-commit (git hook): set aside"}, out.HostConfig)
	require.Empty(t, commandResult(sandbox.Result{Stdout: "x\n"}, nil, 1000, false).HostConfig)
}
