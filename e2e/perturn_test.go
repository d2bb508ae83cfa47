package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/oaifake"
	"github.com/custos-dev/custos/workers"
	"github.com/custos-dev/custos/workflows"
)

// TestHistoryBytesPerTurn (run by hand: CUSTOS_PERTURN=1) prints the history
// bytes each turn adds, at turn 10 and turn 300, for a job that reads a 2 KB
// page every turn.
func TestHistoryBytesPerTurn(t *testing.T) {
	if os.Getenv("CUSTOS_PERTURN") == "" {
		t.Skip("a measurement: CUSTOS_PERTURN=1")
	}
	turns, _ := strconv.Atoi(os.Getenv("CUSTOS_PERTURN"))
	if turns < 11 {
		turns = 300
	}
	srv := startServer(t, "", 0)
	c := dial(t, srv)
	var mu sync.Mutex
	calls := 0
	_, base := startModel(t, func(req openai.ChatCompletionRequest) (oaifake.Reply, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls > turns {
			return oaifake.Say("done"), nil
		}
		return oaifake.Calls(oaifake.ToolCall(fmt.Sprintf("r%d", calls), "Read", map[string]any{"file_path": "page.txt"})), nil
	})
	w, err := workers.Start(c, workers.Options{BaseURL: base, APIKey: "k", Model: "fake", UserConfigDir: t.TempDir(), Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	ws := workspace(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "page.txt"), []byte(strings.Repeat("0123456789abcdef\n", 120)), 0o644))
	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "perturn", TaskQueue: activities.TaskQueue},
		workflows.WorkflowName, workflows.JobInput{Task: "read the page many times", Workspace: ws, MaxTurns: turns + 10, ContextWindow: 10_000_000})
	require.NoError(t, err)
	gctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	require.NoError(t, c.GetWorkflow(gctx, run.GetID(), "").Get(gctx, nil))
	perTurn := map[int]int{}
	turn, runs := 0, 0
	runID := run.GetRunID()
	for runID != "" {
		runs++
		it := c.GetWorkflowHistory(ctx, run.GetID(), runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		next := ""
		for it.HasNext() {
			e, err := it.Next()
			require.NoError(t, err)
			if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activities.ModelActivity {
				turn++
			}
			perTurn[turn] += proto.Size(e)
			if a := e.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				next = a.GetNewExecutionRunId()
			}
		}
		runID = next
	}
	t.Logf("PERTURN runs=%d turn10=%d turn%d=%d", runs, perTurn[10], turns, perTurn[turns])
}
