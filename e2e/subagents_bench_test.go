package e2e

import (
	"fmt"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// childModelTime is how long each child's model call takes in
// BenchmarkSubagentsFourModelCalls.
const childModelTime = 3 * time.Second

// thinkers is a parent that starts n children, each of whose one model
// call takes think.
func thinkers(n int, think time.Duration) *subModel {
	calls := make([]openai.ToolCall, n)
	scripts := map[string]demomodel.Handler{}
	for i := range n {
		task := fmt.Sprintf("think %d", i)
		calls[i] = subTask(fmt.Sprint("t", i), task, task)
		r := demomodel.Say("thought " + task)
		r.Delay = think
		scripts[task] = demomodel.Script(r)
	}
	scripts["split it"] = demomodel.Script(demomodel.Calls(calls...), demomodel.Say("all done"))
	return newSubModel(scripts)
}

// benchSubagents starts the embedded server, an endpoint that answers
// several requests at once, and in-process workers; model is the model of
// the run under way.
func benchSubagents(b *testing.B, model **subModel) (client.Client, func(*subModel) string) {
	srv := testenv.StartServer(b, devserver.Options{UIPort: -1})
	c := testenv.Dial(b, srv)
	_, base := testenv.StartConcurrentModel(b, func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		return (*model).handle(req)
	})
	testenv.StartWorkers(b, c, base, app.Options{})
	ws := testenv.Workspace(b)
	return c, func(m *subModel) string {
		*model = m
		id := fmt.Sprintf("subbench-%d", time.Now().UnixNano())
		testenv.StartJob(b, c, id, jobapi.JobInput{Once: true, Task: "split it", Workspace: ws, Mode: approval.ModeBypass})
		res := testenv.Finished(b, c, id, 2*time.Minute)
		if res.Answer != "all done" {
			b.Fatalf("job %s answered %q", id, res.Answer)
		}
		return id
	}
}

// Four children in one answer, each of whose model call takes 3 s, on an
// endpoint that answers them at once: the time from the parent's first
// model request to its next one (the children's answers as results), and
// that over one child's model time (goal: at most 1.3). Median of the
// runs, after a warm-up.
func BenchmarkSubagentsFourModelCalls(b *testing.B) {
	var m *subModel
	_, run := benchSubagents(b, &m)
	run(thinkers(4, childModelTime)) // warm-up
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		mm := thinkers(4, childModelTime)
		run(mm)
		at := mm.at["split it"]
		if len(at) != 2 {
			b.Fatalf("the parent asked the model %d times", len(at))
		}
		took = append(took, at[1].Sub(at[0]))
	}
	med := median(took)
	b.ReportMetric(med.Seconds(), "s-median")
	b.ReportMetric(med.Seconds()/childModelTime.Seconds(), "x-child")
	b.Logf("four children, 3 s model call each: the parent's next request after %s (%.2f× one child's); runs %v", med, med.Seconds()/childModelTime.Seconds(), took)
}

// A Task call's own cost: from the parent's decision to run it (its audit
// record's time) to the child's first model request. Median of the runs,
// after a warm-up; goal at most 100 ms.
func BenchmarkSubagentTaskCost(b *testing.B) {
	var m *subModel
	c, run := benchSubagents(b, &m)
	run(thinkers(1, 0)) // warm-up
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		mm := thinkers(1, 0)
		decided := taskDecision(b, c, run(mm), "t0")
		first := mm.at["think 0"]
		if len(first) == 0 || decided.IsZero() {
			b.Fatalf("no decision (%v) or no child request (%v)", decided, first)
		}
		took = append(took, first[0].Sub(decided))
	}
	med := median(took)
	b.ReportMetric(float64(med.Microseconds())/1000, "ms-median")
	b.Logf("a Task call, decision to the child's first model request: median %s of %v", med, took)
}

// taskDecision is when the job decided its call callID (its audit's
// decision record).
func taskDecision(b *testing.B, c client.Client, id, callID string) time.Time {
	for _, r := range testenv.Audit(b, c, id) {
		if r.CallID == callID && r.Event == "" && r.Decision != "" {
			return r.Time
		}
	}
	return time.Time{}
}
