package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// BenchmarkParkedJobs parks 1,000 jobs (CUSTOS_PARKED overrides) waiting for
// approval on one worker process with the embedded server, then approves
// them all at once. It reports the worker's resident memory, the time to
// park them all, and the latency from each approval (the decide Update
// sent) to its tool activity starting (ActivityTaskStarted), median and
// p99. Run: go test -run '^$' -bench ParkedJobs -benchtime 1x ./e2e/
func BenchmarkParkedJobs(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("CUSTOS_PARKED")); err == nil && v > 0 {
		n = v
	}
	srv := testenv.StartServer(b, devserver.Options{UIPort: -1})
	c := testenv.Dial(b, srv)
	_, base := testenv.StartModel(b, oneCall(func(task string) openai.ToolCall {
		return demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "out.txt", "content": task})
	}))
	cfg := b.TempDir()
	env := workerEnv(srv, base, cfg)
	w := startWorkerProc(b, buildWorker(b), env)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = b.TempDir()
	}
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	ids := make([]string, n)
	parallel(n, 32, func(i int) {
		ids[i] = fmt.Sprintf("parked-%d", i)
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: ids[i], TaskQueue: api.TaskQueue}, jobapi.WorkflowName,
			jobapi.JobInput{Once: true, Task: fmt.Sprintf("job %d", i), Workspace: ws[i], ApprovalTimeout: time.Hour})
		if err != nil {
			b.Error(err)
		}
	})
	parallel(n, 32, func(i int) { waitPendingB(b, c, ids[i], "w1") })
	park := time.Since(start)
	rss, hwm := procMemory(w.cmd.Process.Pid)

	sent := make([]time.Time, n)
	parallel(n, n, func(i int) {
		sent[i] = time.Now()
		_, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: ids[i], UpdateName: jobapi.DecideUpdate,
			Args: []any{jobapi.ApprovalDecision{CallID: "w1", Decision: "allow", By: "bench"}}, WaitForStage: client.WorkflowUpdateStageAccepted})
		if err != nil {
			b.Error(err)
		}
	})
	lat := make([]time.Duration, n)
	parallel(n, 32, func(i int) {
		run := c.GetWorkflow(ctx, ids[i], "")
		if err := run.Get(ctx, nil); err != nil {
			b.Error(err)
			return
		}
		lat[i] = toolStarted(b, c, ids[i], api.WriteActivity).Sub(sent[i])
	})
	b.StopTimer()
	sort.Slice(lat, func(i, k int) bool { return lat[i] < lat[k] })
	b.ReportMetric(float64(n), "jobs")
	b.ReportMetric(park.Seconds(), "s-to-park")
	b.ReportMetric(float64(rss)/1024, "MiB-worker-RSS")
	b.ReportMetric(float64(hwm)/1024, "MiB-worker-peak")
	b.ReportMetric(float64(lat[n/2].Milliseconds()), "ms-approval-to-tool-p50")
	b.ReportMetric(float64(lat[n*99/100].Milliseconds()), "ms-approval-to-tool-p99")
}

// BenchmarkEightWorkspaces is the wall time of 8 jobs, each running one
// `sleep 2` on its own workspace, against one such job alone, on one worker
// with 8 Bash lanes (CUSTOS_BENCH_LANES=1 shows one lane, as before lanes).
func BenchmarkEightWorkspaces(b *testing.B) {
	nLanes := 8
	if v, err := strconv.Atoi(os.Getenv("CUSTOS_BENCH_LANES")); err == nil && v > 0 {
		nLanes = v
	}
	srv := testenv.StartServer(b, devserver.Options{UIPort: -1})
	c := testenv.Dial(b, srv)
	_, base := testenv.StartModel(b, oneCall(func(string) openai.ToolCall {
		return demomodel.ToolCall("b1", "Bash", map[string]any{"command": "sleep 2"})
	}))
	testenv.StartWorkers(b, c, base, app.Options{BashLanes: nLanes})
	// Eight workspaces, on as many lanes as there are.
	lanes := map[string]bool{}
	var ws []string
	for len(ws) < 8 {
		d := b.TempDir()
		if q := api.BashLaneQueue("", d, nLanes); !lanes[q] || len(lanes) >= nLanes {
			lanes[q] = true
			ws = append(ws, d)
		}
	}
	runJobsB := func(k int, round int) time.Duration {
		start := time.Now()
		parallel(k, k, func(i int) {
			run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{TaskQueue: api.TaskQueue}, jobapi.WorkflowName,
				jobapi.JobInput{Once: true, Task: fmt.Sprintf("r%d-%d", round, i), Workspace: ws[i], Mode: approval.ModeBypass})
			if err == nil {
				err = run.Get(context.Background(), nil)
			}
			if err != nil {
				b.Error(err)
			}
		})
		return time.Since(start)
	}
	b.ResetTimer()
	var one, eight time.Duration
	for r := 0; r < b.N; r++ {
		one += runJobsB(1, 2*r)
		eight += runJobsB(8, 2*r+1)
	}
	b.ReportMetric(one.Seconds()/float64(b.N), "s-one-job")
	b.ReportMetric(eight.Seconds()/float64(b.N), "s-eight-jobs")
	b.ReportMetric(eight.Seconds()/one.Seconds(), "ratio")
}

func parallel(n, width int, fn func(i int)) {
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

func waitPendingB(b *testing.B, c client.Client, id, callID string) {
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		if testenv.Pending(c, id, callID) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Errorf("%s: %s never became pending", id, callID)
}

// toolStarted is when the job's first activity of that type started.
func toolStarted(b *testing.B, c client.Client, id, activityType string) time.Time {
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	sched := map[int64]bool{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			b.Error(err)
			return time.Time{}
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activityType {
			sched[e.GetEventId()] = true
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && sched[a.GetScheduledEventId()] {
			return e.GetEventTime().AsTime()
		}
	}
	b.Errorf("%s: no %s started", id, activityType)
	return time.Time{}
}

// procMemory reads a process's resident and peak resident memory (KiB).
func procMemory(pid int) (rss, hwm int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "VmRSS:" {
			rss, _ = strconv.Atoi(f[1])
		}
		if len(f) >= 2 && f[0] == "VmHWM:" {
			hwm, _ = strconv.Atoi(f[1])
		}
	}
	return rss, hwm
}
