package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/checkpoint"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// A job with the official filesystem server, its entry saying
// writeWorkspace: its write_file lands in the workspace and in the job's
// checkpoint under the call (a rewind takes it back); a .claude.json it
// writes is withheld and the model told so; in plan mode the same tool is
// refused before it runs.
func TestMCPServerWritesTheWorkspaceThroughTheCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sandbox")
	}
	bin, err := exec.LookPath("mcp-server-filesystem")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mcp-server-filesystem not installed: make deps installs @modelcontextprotocol/server-filesystem")
		}
		t.Skip("mcp-server-filesystem not installed")
	}
	srv := testenv.StartServer(t, devserver.Options{UIPort: -1})
	c := testenv.Dial(t, srv)
	ws := testenv.Workspace(t)
	write := func(id, rel string) demomodel.Reply {
		return demomodel.Calls(demomodel.ToolCall(id, "mcp__fs__write_file",
			map[string]any{"path": filepath.Join(ws, rel), "content": "from the server\n"}))
	}
	model, base := testenv.StartModel(t, demomodel.Script(
		write("a", "hello.txt"), write("b", ".claude.json"), demomodel.Say("done"),
		write("p", "plan.txt"), demomodel.Say("planned"),
	))
	user := t.TempDir()
	settings, _ := json.Marshal(map[string]any{
		"mcpServers":  map[string]any{"fs": map[string]any{"command": bin, "args": []string{ws}, "writeWorkspace": true}},
		"permissions": map[string]any{"allow": []string{"mcp__fs"}}})
	require.NoError(t, os.MkdirAll(filepath.Join(user, "custos"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(user, "custos", "settings.json"), settings, 0o600))
	testenv.StartWorkers(t, c, base, app.Options{UserConfigDir: user})

	id := fmt.Sprintf("mcp-write-%d", time.Now().UnixNano())
	testenv.StartJob(t, c, id, jobapi.JobInput{Once: true, Task: "write", Workspace: ws})
	res := testenv.Finished(t, c, id, 3*time.Minute)
	assert.Equal(t, "done", res.Answer)
	got, err := os.ReadFile(filepath.Join(ws, "hello.txt"))
	require.NoError(t, err)
	assert.Equal(t, "from the server\n", string(got))
	msgs := toolMessages(model.Requests()[:3])
	assert.Contains(t, msgs["b"], "did not apply", "the model is told what was withheld")
	_, err = os.Lstat(filepath.Join(ws, ".claude.json"))
	assert.True(t, os.IsNotExist(err), ".claude.json was withheld, not applied")

	s := checkpoint.Store{Dir: api.CheckpointDir(testenv.JobFiles(t, c, id))}
	recs, err := s.Records(id)
	require.NoError(t, err)
	var changed []string
	for _, r := range recs {
		for _, ch := range r.Changes {
			changed = append(changed, r.Tool+" "+ch.Path)
		}
	}
	assert.Contains(t, changed, "mcp__fs__write_file hello.txt")
	plan, err := s.PlanRewind(id, ws, 0)
	require.NoError(t, err)
	_, err = s.ApplyRewind(ws, plan, false)
	require.NoError(t, err)
	_, err = os.Lstat(filepath.Join(ws, "hello.txt"))
	assert.True(t, os.IsNotExist(err), "the rewind took the server's write back")

	pid := id + "-plan"
	testenv.StartJob(t, c, pid, jobapi.JobInput{Once: true, Task: "plan", Workspace: ws, Mode: approval.ModePlan})
	res = testenv.Finished(t, c, pid, 3*time.Minute)
	assert.Equal(t, "planned", res.Answer)
	reqs := model.Requests()
	assert.Contains(t, toolMessages(reqs[len(reqs)-1:])["p"], "plan mode")
	_, err = os.Lstat(filepath.Join(ws, "plan.txt"))
	assert.True(t, os.IsNotExist(err), "plan mode let the server write")
}
