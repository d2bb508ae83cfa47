package e2e

import (
	"context"
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
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// oneCall answers each job by its task: the tool call call(task) makes,
// then done.
func oneCall(call func(task string) openai.ToolCall) demomodel.Handler {
	var mu sync.Mutex
	asked := map[string]bool{}
	return func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		mu.Lock()
		defer mu.Unlock()
		task := req.Messages[1].Content
		if asked[task] {
			return demomodel.Say("done"), nil
		}
		asked[task] = true
		return demomodel.Calls(call(task)), nil
	}
}

// byTask answers each job by its task: one Bash command, then done.
func byTask(commands map[string]string) demomodel.Handler {
	return oneCall(func(task string) openai.ToolCall {
		return demomodel.ToolCall("b1", "Bash", map[string]any{"command": commands[task]})
	})
}

// laneWorkspaces returns n workspaces whose lanes among lanes differ (or,
// with same, one workspace n times).
func laneWorkspaces(t *testing.T, n, lanes int) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		ws := testenv.Workspace(t)
		if q := api.BashLaneQueue("", ws, lanes); !seen[q] {
			seen[q] = true
			out = append(out, ws)
		}
	}
	return out
}

type interval struct{ start, end time.Time }

// bashInterval is when a job's Bash activity started and ended.
func bashInterval(t *testing.T, c client.Client, id string) interval {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var iv interval
	scheduled := map[int64]bool{}
	started := map[int64]bool{}
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == api.BashActivity {
			scheduled[e.GetEventId()] = true
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
			iv.start = e.GetEventTime().AsTime()
			started[e.GetEventId()] = true
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && started[a.GetStartedEventId()] {
			iv.end = e.GetEventTime().AsTime()
		}
	}
	require.False(t, iv.start.IsZero() || iv.end.IsZero(), "job %s ran no Bash", id)
	return iv
}

func overlap(a, b interval) bool { return a.start.Before(b.end) && b.start.Before(a.end) }

func runJobs(t *testing.T, c client.Client, jobs map[string]jobapi.JobInput) {
	t.Helper()
	var runs []client.WorkflowRun
	for id, in := range jobs {
		r := testenv.StartJob(t, c, id, in)
		runs = append(runs, r)
	}
	for _, r := range runs {
		testenv.Finished(t, c, r.GetID(), 2*time.Minute)
	}
}

// Commands on different workspaces run at the same time on their lanes;
// commands on one workspace, even from two jobs, never overlap.
func TestBashLanes(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	cmds := map[string]string{"a": "sleep 2", "b": "sleep 2", "c": "sleep 2", "d": "sleep 2"}
	_, base := testenv.StartModel(t, byTask(cmds))
	testenv.StartWorkers(t, c, base, app.Options{BashLanes: 3})

	// Three workspaces on three lanes: two jobs alone on theirs, two jobs
	// sharing the third.
	wss := laneWorkspaces(t, 3, 3)
	two, same := wss[:2], wss[2]
	job := func(task, ws string) jobapi.JobInput {
		return jobapi.JobInput{Once: true, Task: task, Workspace: ws, Mode: approval.ModeBypass}
	}
	runJobs(t, c, map[string]jobapi.JobInput{
		"lanes-a": job("a", two[0]), "lanes-b": job("b", two[1]),
		"lanes-c": job("c", same), "lanes-d": job("d", same),
	})
	a, b := bashInterval(t, c, "lanes-a"), bashInterval(t, c, "lanes-b")
	assert.True(t, overlap(a, b), "different workspaces run in parallel: %v %v", a, b)
	cc, d := bashInterval(t, c, "lanes-c"), bashInterval(t, c, "lanes-d")
	assert.False(t, overlap(cc, d), "one workspace's commands never overlap: %v %v", cc, d)
}

// A job waiting when its worker restarts with another lane count finds its
// workspace's new lane: the call that did not start is sent again there.
func TestBashLaneSurvivesWorkerRestartWithOtherLaneCount(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	model, base := testenv.StartModel(t, byTask(map[string]string{"restart": "echo ran > ran.txt"}))
	// A workspace on a lane the one-lane worker does not serve.
	var ws string
	for ws == "" || api.BashLaneQueue("", ws, 4) == api.BashLaneQueue("", ws, 1) {
		ws = testenv.Workspace(t)
	}
	w4 := testenv.StartWorkers(t, c, base, app.Options{BashLanes: 4})
	ctx := context.Background()
	run := testenv.StartJob(t, c, "lane-restart", jobapi.JobInput{Once: true, Task: "restart", Workspace: ws, ApprovalTimeout: 5 * time.Minute, LaneWait: 3 * time.Second})
	testenv.WaitPending(t, c, run.GetID(), "b1", pendingWait)
	w4.Stop()

	testenv.StartWorkers(t, c, base, app.Options{BashLanes: 1})
	answer(t, c, run.GetID(), "b1")
	testenv.Finished(t, c, run.GetID(), 2*time.Minute)
	b, err := os.ReadFile(filepath.Join(ws, "ran.txt"))
	if err != nil {
		testenv.LogJob(t, c, run.GetID())
	}
	require.NoError(t, err, "b1's result, as the model was sent it: %s", testenv.ToolResult(model, "b1"))
	assert.Equal(t, "ran\n", string(b))

	v, err := c.QueryWorkflow(ctx, run.GetID(), "", jobapi.EventsQuery, 0)
	require.NoError(t, err)
	var evs []jobapi.Event
	require.NoError(t, v.Get(&evs))
	var lane []string
	for _, e := range evs {
		if e.Kind == "lane" {
			lane = append(lane, e.Text)
		}
	}
	require.Len(t, lane, 1)
	assert.True(t, strings.HasPrefix(lane[0], "not started on "+api.BashLaneQueue("", ws, 4)+" within 3s"), lane[0])
}

// answer allows a pending call through the decide Update.
func answer(t *testing.T, c client.Client, id, callID string) {
	t.Helper()
	_, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: jobapi.DecideUpdate,
		Args: []any{jobapi.ApprovalDecision{CallID: callID, Decision: "allow", By: "test"}}, WaitForStage: client.WorkflowUpdateStageAccepted})
	require.NoError(t, err)
}
