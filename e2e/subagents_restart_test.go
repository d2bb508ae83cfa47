package e2e

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// A worker process killed -9 while three children wait on the model (their
// requests held open by the endpoint, all at once): a new worker process
// finishes the children, and the parent gets every answer as its Task
// calls' results; each child asked the model again once, none twice.
func TestSubagentsSurviveWorkerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the worker binary and kills it")
	}
	bin := buildWorker(t)
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	release := make(chan struct{})
	var held atomic.Int32
	// hang holds a child's first request until the worker that sent it is
	// dead; the request sent again by the next worker gets the answer.
	hang := func(answer string) demomodel.Handler {
		var n atomic.Int32
		return func(openai.ChatCompletionRequest) (demomodel.Reply, error) {
			if n.Add(1) == 1 {
				held.Add(1)
				<-release
				return demomodel.Fail(503, "the worker that asked is gone"), nil
			}
			return demomodel.Say(answer), nil
		}
	}
	m := newSubModel(map[string]demomodel.Handler{
		"split it": demomodel.Script(
			demomodel.Calls(subTask("a", "part A", "do A"), subTask("b", "part B", "do B"), subTask("c", "part C", "do C")),
			demomodel.Say("all done")),
		"do A": hang("answer of A"),
		"do B": hang("answer of B"),
		"do C": hang("answer of C"),
	})
	_, base := testenv.StartConcurrentModel(t, m.handle)
	env := workerEnv(srv, base, t.TempDir())
	w := startWorkerProc(t, bin, env)
	ws := testenv.Workspace(t)
	id := fmt.Sprintf("subkill-%d", time.Now().UnixNano())
	testenv.StartJob(t, c, id, jobapi.JobInput{Once: true, Task: "split it", Workspace: ws, Mode: approval.ModeBypass})
	require.Eventually(t, func() bool { return held.Load() == 3 }, 90*time.Second, 50*time.Millisecond,
		"the three children never all waited on the model")
	w.kill()
	close(release)
	startWorkerProc(t, bin, env)

	res := testenv.Finished(t, c, id, 3*time.Minute)
	assert.Equal(t, "all done", res.Answer)
	got := m.toolResults("split it")
	for _, k := range []string{"a", "b", "c"} {
		assert.Contains(t, got[k], "Subagent "+id+"-task-"+k, "call %s", k)
		assert.Contains(t, got[k], "answered:\n\nanswer of "+string(rune('A'+k[0]-'a')), "call %s", k)
		desc, err := c.DescribeWorkflowExecution(t.Context(), id+"-task-"+k, "")
		require.NoError(t, err)
		assert.Equal(t, "Completed", desc.WorkflowExecutionInfo.Status.String(), "child %s", k)
	}
	for _, task := range []string{"do A", "do B", "do C"} {
		assert.Len(t, m.requests(task), 2, "%s: the request cut off by the kill, then one more", task)
	}
	assert.Len(t, m.requests("split it"), 2, "the parent asked once for the calls and once with their results")
}
