package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// busyModel keeps a job busy: every answer asks for a Read after a short,
// random think, so at any moment a model call or a tool call is in flight
// and its completion races whatever the job is doing.
func busyModel(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	r := demomodel.Calls(demomodel.ToolCall(fmt.Sprintf("r%d", len(req.Messages)), "Read", map[string]any{"file_path": "a.txt"}))
	r.Delay = time.Duration(rand.IntN(20)) * time.Millisecond
	return r, nil
}

// The end Update sent while a job is busy in a turn (a model call or a
// tool call in flight, under the load of several such jobs, each also
// signalled while it ends) always gets its answer, and the job ends once,
// as "ended". The Update is answered in a workflow task of its own, before
// the one that completes the job: a completion that new events race is
// refused by the server (UnhandledCommand) and would take the Update's
// answer with it ("unexpected workflow task failure").
func TestEndWhileBusyIsAnsweredAndEndsOnce(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	_, base := testenv.StartConcurrentModel(t, busyModel)
	testenv.StartWorkers(t, c, base, app.Options{})
	const jobs = 12
	var wg sync.WaitGroup
	for i := range jobs {
		ws := testenv.Workspace(t)
		id := fmt.Sprintf("end-busy-%d-%d", i, time.Now().UnixNano())
		testenv.StartJob(t, c, id, jobapi.JobInput{Task: "keep reading", Workspace: ws, ApprovalTimeout: 10 * time.Minute})
		wg.Add(1)
		go func() {
			defer wg.Done()
			endBusy(t, c, id)
		}()
	}
	wg.Wait()
}

// endBusy lets job id work a moment, then ends it while signals arrive,
// and checks the answer, the result and the history.
func endBusy(t *testing.T, c client.Client, id string) {
	time.Sleep(time.Duration(200+rand.IntN(300)) * time.Millisecond)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // load: events that race the job's last workflow task
		defer close(done)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = c.SignalWorkflow(context.Background(), id, "", jobapi.MessageSignal, fmt.Sprintf("note %d", n))
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res jobapi.EndResult
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: jobapi.EndUpdate,
		Args: []any{jobapi.End{By: "e2e"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	close(stop)
	<-done
	if !assert.NoError(t, err, "end %s", id) {
		testenv.LogJob(t, c, id)
		return
	}
	out, err := testenv.Result(c, id, time.Minute)
	if assert.NoError(t, err, id) {
		assert.Equal(t, "ended", out.Reason, id)
	}
	assertEndAnsweredBeforeCompletion(t, c, id)
}

// assertEndAnsweredBeforeCompletion checks job id's history: one end
// Update completed, in a workflow task before the one that completed the
// job, and the job completed once.
func assertEndAnsweredBeforeCompletion(t *testing.T, c client.Client, id string) {
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var updates, completions, tasksBetween int
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		switch ev.GetEventType() {
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
			updates++
			tasksBetween = 0
		case enums.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			tasksBetween++
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			completions++
		}
	}
	assert.Equal(t, 1, updates, "%s: end Updates completed", id)
	assert.Equal(t, 1, completions, "%s: completions", id)
	assert.GreaterOrEqual(t, tasksBetween, 1, "%s: the job completed in the workflow task that answered the end Update", id)
}
