package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/mcptest"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// toolMessages are the tool results the model was last sent, by call ID.
func toolMessages(reqs []openai.ChatCompletionRequest) map[string]string {
	out := map[string]string{}
	if len(reqs) == 0 {
		return out
	}
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == openai.ChatMessageRoleTool {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

// waitRunning waits until the job's call id has been allowed (its tool
// activity is scheduled).
func waitRunning(t testing.TB, c client.Client, id, callID string) {
	t.Helper()
	require.Eventually(t, func() bool {
		q, err := c.QueryWorkflow(context.Background(), id, "", jobapi.EventsQuery, 0)
		if err != nil {
			return false
		}
		var events []jobapi.Event
		if q.Get(&events) != nil {
			return false
		}
		return slices.ContainsFunc(events, func(e jobapi.Event) bool { return e.Kind == "decision" && e.CallID == callID })
	}, pendingWait, 50*time.Millisecond)
}

// A worker killed with SIGKILL while an MCP call runs: the new worker
// starts the server afresh; the read-only call (trusted server) runs
// again and answers, the other is reported to the model as interrupted,
// never run twice.
func TestMCPCallSurvivesKill9OfWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the worker binary and kills it")
	}
	if usingExternalServer() {
		t.Skip("starts worker processes of its own against its own server")
	}
	bin := buildWorker(t)
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	model, base := testenv.StartModel(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("s", "mcp__t__sleep", map[string]any{"ms": 4000})),
		demomodel.Calls(demomodel.ToolCall("w", "mcp__t__work", map[string]any{"ms": 60000})),
		demomodel.Say("done"),
	))
	configHome := t.TempDir()
	settings, _ := json.Marshal(map[string]any{
		"mcpServers":  map[string]any{"t": map[string]any{"command": "./mcp-server", "trusted": true}},
		"permissions": map[string]any{"allow": []string{"mcp__t"}}})
	require.NoError(t, os.MkdirAll(filepath.Join(configHome, "custos"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(configHome, "custos", "settings.json"), settings, 0o600))
	env := workerEnv(srv, base, configHome)
	w := startWorkerProc(t, bin, env)
	ws := testenv.Workspace(t)
	mcptest.Place(t, ws, "mcp-server")

	id := fmt.Sprintf("mcp-kill9-%d", time.Now().UnixNano())
	testenv.StartJob(t, c, id, jobapi.JobInput{Once: true, Task: "use the server", Workspace: ws})
	waitRunning(t, c, id, "s")
	time.Sleep(time.Second) // the call is in the server now
	w.kill()
	w = startWorkerProc(t, bin, env)
	waitRunning(t, c, id, "w")
	time.Sleep(time.Second)
	w.kill()
	startWorkerProc(t, bin, env)

	res := testenv.Finished(t, c, id, 3*time.Minute)
	assert.Equal(t, "done", res.Answer)
	got := toolMessages(model.Requests())
	assert.Equal(t, "slept 4000 ms", got["s"], "the read-only call ran again on a fresh server")
	assert.Contains(t, got["w"], "interrupted", "a call that may have changed something is not run again")
	assert.Contains(t, got["w"], "may or may not have taken effect")
	assert.NotContains(t, got["w"], "worked")
}
