package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/proto"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// A job of 300 turns whose conversation grows past 2 MB: no history event
// comes near Temporal's 256 KB warning size, each turn adds about the same
// to history at turn 10 as at turn 200 (the conversation lives in the
// transcript, not in activity inputs), runs are bounded by their event
// count, and the model sees the whole conversation every turn.
func TestLongJobHistoryDoesNotGrowWithTheConversation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 300 turns")
	}
	const turns = 300
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	var mu sync.Mutex
	calls := 0
	model, base := testenv.StartModel(t, func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls > turns {
			return demomodel.Say(fmt.Sprintf("read it %d times; the conversation has %d messages", turns, len(req.Messages))), nil
		}
		return demomodel.Calls(demomodel.ToolCall(fmt.Sprintf("r%d", calls), "Read", map[string]any{"file_path": "page.txt"})), nil
	})
	testenv.StartWorkers(t, c, base, app.Options{})
	ws := testenv.Workspace(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "page.txt"), []byte(strings.Repeat("0123456789abcdef\n", 480)), 0o644)) // 8 KB

	ctx := context.Background()
	run := testenv.StartJob(t, c, "long-job", jobapi.JobInput{Once: true, Task: "read the page many times", Workspace: ws, MaxTurns: turns + 10,
		ContextWindow: 10_000_000}) // this test is about history, not compaction
	res := testenv.Finished(t, c, run.GetID(), 15*time.Minute)
	assert.Equal(t, fmt.Sprintf("read it %d times; the conversation has %d messages", turns, 2+2*turns), res.Answer,
		"the last request carried the whole conversation")
	assert.Equal(t, turns+1, res.Turns)

	// Every request carried the conversation so far, each message once.
	reqs := model.Requests()
	for i, r := range reqs {
		require.Len(t, r.Messages, 2+2*i, "request %d", i+1)
	}
	size := 0
	for _, m := range reqs[len(reqs)-1].Messages {
		size += len(m.Content)
	}
	assert.Greater(t, size, 2<<20, "the conversation passed 2 MB")

	// Walk every run's history: the largest event, and the bytes each turn
	// (from one model call to the next) added.
	perTurn := map[int]int{}
	turn, runs, largest := 0, 0, 0
	runID := run.GetRunID()
	for runID != "" {
		runs++
		it := c.GetWorkflowHistory(ctx, run.GetID(), runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		events, next := 0, ""
		for it.HasNext() {
			e, err := it.Next()
			require.NoError(t, err)
			events++
			n := proto.Size(e)
			largest = max(largest, n)
			if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == api.ModelActivity {
				turn++
			}
			perTurn[turn] += n
			if a := e.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				next = a.GetNewExecutionRunId()
			}
		}
		assert.LessOrEqual(t, events, 2200, "run %d is bounded by its event count", runs)
		runID = next
	}
	assert.Less(t, largest, 256<<10, "no event near the 256 KB warning size")
	assert.Greater(t, runs, 1, "the job continued as new")
	t.Logf("%d runs; largest event %d bytes; bytes added by turn 10: %d, turn 200: %d", runs, largest, perTurn[10], perTurn[200])
	assert.InDelta(t, perTurn[10], perTurn[200], float64(perTurn[10])*0.25, "a turn adds about the same at turn 10 and at turn 200")
	assert.Less(t, perTurn[200], 40<<10, "a turn adds its tool result and little else")

	// The transcript in the workspace holds the whole conversation once.
	transcript := transcriptOf(t, c, run.GetID())
	assert.Equal(t, 2+2*turns+1, strings.Count(transcript, "\n"))
}
