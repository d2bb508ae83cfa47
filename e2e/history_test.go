package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// A job with every kind of step (read-only allow, approval, denial, rule
// allow, mode change, stray signal) replays deterministically from its real
// server history. With CUSTOS_RECORD_HISTORY=path the history is also written
// there; workflows/testdata/agent_history.json was recorded this way and
// replay_test.go keeps replaying it against later code.
func TestJobHistoryReplays(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	_, base := testenv.StartModel(t, demomodel.Script(
		demomodel.Calls(
			demomodel.ToolCall("r1", "Read", map[string]any{"file_path": "a.txt"}),
			demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "b.txt", "content": "b"}),
			demomodel.ToolCall("b1", "Bash", map[string]any{"command": "echo hi"}),
			// Denied by the system hook before anyone is asked: replay
			// needs the hooks the worker had.
			demomodel.ToolCall("p1", "Write", map[string]any{"file_path": ".git/hooks/pre-commit", "content": "x"}),
		),
		demomodel.Calls(demomodel.ToolCall("e1", "Edit", map[string]any{"file_path": "b.txt", "old_string": "b", "new_string": "c"})),
		demomodel.Say("recorded"),
	))
	testenv.StartWorkers(t, c, base, app.Options{})
	ws := testenv.Workspace(t)
	require.NoError(t, os.WriteFile(ws+"/a.txt", []byte("alpha"), 0o644))

	ctx := context.Background()
	// b1 is asked as soon as the model answers, w1 only after its preview
	// activity, and the test waits for them one after the other: with the
	// default 60 s deadline a slow first wait (it may take pendingWait)
	// would find b1 already denied by its timer, and fail on b1.
	run := testenv.StartJob(t, c, "history-recording", jobapi.JobInput{Once: true, Task: "record a history", Workspace: ws,
		ApprovalTimeout: 10 * time.Minute})
	testenv.WaitPending(t, c, run.GetID(), "w1", pendingWait)
	testenv.WaitPending(t, c, run.GetID(), "b1", pendingWait)
	signal := func(name string, v any) {
		require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), "", name, v))
	}
	signal(jobapi.ApprovalSignal, jobapi.ApprovalDecision{CallID: "nobody", Decision: "allow", By: "e2e"})
	signal(jobapi.ApprovalSignal, jobapi.ApprovalDecision{CallID: "w1", Decision: "allow", By: "e2e"})
	signal(jobapi.ApprovalSignal, jobapi.ApprovalDecision{CallID: "b1", Decision: "deny", Reason: "no", By: "e2e"})
	signal(jobapi.ModeSignal, jobapi.ModeChange{Mode: "acceptEdits", By: "e2e"})
	res := testenv.Finished(t, c, run.GetID(), 2*time.Minute)
	require.Equal(t, "recorded", res.Answer)

	hist := fetchHistory(t, c, run)
	// Replay as a worker runs the workflow (its Agent's system hooks are
	// approval.SystemHooks) succeeds with nothing else given; with no system
	// hooks the protected write would have gone to a person, so the same
	// history does not replay.
	require.NoError(t, replay(hist, &workflows.Agent{}))
	require.Error(t, replay(hist, &workflows.Agent{Hooks: hooks.NewRegistry()}), "replay without the system hooks must diverge")

	if path := os.Getenv("CUSTOS_RECORD_HISTORY"); path != "" {
		writeHistory(t, hist, path)
	}
}

// fetchHistory is a run's whole history from the server.
func fetchHistory(t *testing.T, c client.Client, run client.WorkflowRun) *historypb.History {
	t.Helper()
	hist := &historypb.History{}
	it := c.GetWorkflowHistory(context.Background(), run.GetID(), run.GetRunID(), false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		hist.Events = append(hist.Events, ev)
	}
	return hist
}

// replay replays hist against agent, registered as a worker registers it.
func replay(hist *historypb.History, agent *workflows.Agent) error {
	replayer := worker.NewWorkflowReplayer()
	agent.Register(replayer)
	return replayer.ReplayWorkflowHistory(nil, hist)
}

// writeHistory saves hist as the JSON the replay tests read.
func writeHistory(t *testing.T, hist *historypb.History, path string) {
	t.Helper()
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	t.Logf("history with %d events written to %s", len(hist.Events), path)
}
