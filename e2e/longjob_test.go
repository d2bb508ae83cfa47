package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/oaifake"
	"github.com/custos-dev/custos/workers"
	"github.com/custos-dev/custos/workflows"
)

// A job of several hundred turns continues as new when the server suggests
// it, so no run's history nears Temporal's limits, and the job finishes with
// its whole conversation.
func TestLongJobContinuesAsNew(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 300 turns")
	}
	const turns = 300
	srv := startServer(t, "", 0)
	c := dial(t, srv)
	model, base := startModel(t, func(req openai.ChatCompletionRequest) (oaifake.Reply, error) {
		n := 0
		for _, m := range req.Messages {
			if m.Role == openai.ChatMessageRoleAssistant {
				n++
			}
		}
		if n >= turns {
			return oaifake.Say(fmt.Sprintf("read it %d times; the conversation has %d messages", n, len(req.Messages))), nil
		}
		return oaifake.Calls(oaifake.ToolCall(fmt.Sprintf("r%d", n+1), "Read", map[string]any{"file_path": "page.txt"})), nil
	})
	w, err := workers.Start(c, workers.Options{BaseURL: base, APIKey: "k", Model: "fake", UserConfigDir: t.TempDir(), Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	ws := workspace(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "page.txt"), []byte(strings.Repeat("0123456789abcdef\n", 120)), 0o644))

	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "long-job", TaskQueue: activities.TaskQueue},
		workflows.WorkflowName, workflows.JobInput{Task: "read the page many times", Workspace: ws, MaxTurns: turns + 10})
	require.NoError(t, err)
	gctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var res workflows.JobResult
	require.NoError(t, c.GetWorkflow(gctx, run.GetID(), "").Get(gctx, &res))
	assert.Equal(t, fmt.Sprintf("read it %d times; the conversation has %d messages", turns, 2+2*turns), res.Answer)
	assert.Equal(t, turns+1, res.Turns)

	v, err := c.QueryWorkflow(ctx, run.GetID(), "", workflows.StatusQuery)
	require.NoError(t, err)
	var st workflows.Status
	require.NoError(t, v.Get(&st))
	assert.GreaterOrEqual(t, st.Runs, 1, "the job continued as new at least once")

	// The first run stopped well short of the limits (50 MiB, 50K events).
	d, err := c.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
	require.NoError(t, err)
	info := d.GetWorkflowExecutionInfo()
	assert.Equal(t, "ContinuedAsNew", info.GetStatus().String())
	assert.Less(t, info.GetHistorySizeBytes(), int64(12<<20))
	assert.Less(t, info.GetHistoryLength(), int64(6000))
	t.Logf("%d runs; first run: %d events, %d bytes; model saw %d requests", st.Runs+1, info.GetHistoryLength(), info.GetHistorySizeBytes(), len(model.Requests()))

	// The transcript in the workspace holds the whole conversation once.
	transcript := readFile(t, ws, filepath.Join(".custos", "sessions", run.GetID()+".jsonl"))
	assert.Equal(t, 2+2*turns+1, strings.Count(transcript, "\n"))
}
