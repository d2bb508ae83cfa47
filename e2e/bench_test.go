package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

func noop(context.Context) error { return nil }

// emptyActivities runs n empty activities one after another.
func emptyActivities(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	for i := 0; i < n; i++ {
		if err := workflow.ExecuteActivity(ctx, "noop").Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkEmptyActivityRoundTrip is the baseline: one empty activity round
// trip in a workflow on the embedded server. ns/op is per activity.
func BenchmarkEmptyActivityRoundTrip(b *testing.B) {
	srv := testenv.StartServer(b, devserver.Options{UIPort: -1})
	c := testenv.Dial(b, srv)
	w := worker.New(c, "bench-empty", worker.Options{})
	w.RegisterWorkflow(emptyActivities)
	w.RegisterActivityWithOptions(noop, activity.RegisterOptions{Name: "noop"})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	b.ResetTimer()
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{TaskQueue: "bench-empty"}, emptyActivities, b.N)
	if err != nil {
		b.Fatal(err)
	}
	if err := run.Get(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAllowedToolCallTurn is one turn of a job whose model asks for one
// allowed tool call (a Read, allowed by layer 2): model activity, layers 1-3,
// the Read activity, the session save, on the embedded server. ns/op is per
// turn; compare with BenchmarkEmptyActivityRoundTrip.
func BenchmarkAllowedToolCallTurn(b *testing.B) {
	srv := testenv.StartServer(b, devserver.Options{UIPort: -1})
	c := testenv.Dial(b, srv)
	turns := 0
	_, base := testenv.StartModel(b, func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		turns++
		if turns > b.N {
			return demomodel.Say("done"), nil
		}
		return demomodel.Calls(demomodel.ToolCall(fmt.Sprintf("r%d", turns), "Read", map[string]any{"file_path": "a.txt"})), nil
	})
	testenv.StartWorkers(b, c, base, app.Options{})
	ws := testenv.Workspace(b)
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{TaskQueue: api.TaskQueue},
		jobapi.WorkflowName, jobapi.JobInput{Once: true, Task: "bench", Workspace: ws, MaxTurns: b.N + 1})
	if err != nil {
		b.Fatal(err)
	}
	if err := run.Get(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
}
