package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// BenchmarkShortJobs is the throughput of short jobs (one Read, allowed by
// layer 2, then an answer) run by worker processes that connect as deployed
// workers do (TEMPORAL_ADDRESS and TLS files): on the embedded SQLite server
// and, when CUSTOS_E2E_TEMPORAL_ADDRESS points at one (make bench-postgres),
// on the PostgreSQL-backed server, with one and with two worker processes.
// b.N jobs are started at once; the figure is jobs/s from the first start to
// the last completion. Run with a fixed count (-benchtime 40x): each round
// starts its own worker processes.
func BenchmarkShortJobs(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, procs := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", backend, procs), func(b *testing.B) {
				var srv testenv.Server
				switch backend {
				case "sqlite":
					srv = embedded(testenv.StartServer(b, devserver.Options{UIPort: -1}))
				case "postgres":
					if !usingExternalServer() {
						b.Skip("no PostgreSQL-backed server: run through make bench-postgres")
					}
					srv = externalServerB(b)
				}
				benchShortJobs(b, srv, procs)
			})
		}
	}
}

func benchShortJobs(b *testing.B, srv testenv.Server, procs int) {
	bin := buildWorker(b)
	c := testenv.Dial(b, srv)
	_, base := testenv.StartModel(b, func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		for _, m := range req.Messages {
			if m.Role == openai.ChatMessageRoleTool {
				return demomodel.Say("done"), nil
			}
		}
		return demomodel.Calls(demomodel.ToolCall("r1", "Read", map[string]any{"file_path": "a.txt"})), nil
	})
	env := workerEnv(srv, base, b.TempDir())
	for i := 0; i < procs; i++ {
		startWorkerProc(b, bin, env)
	}
	ws := testenv.Workspace(b)
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	prefix := fmt.Sprintf("bench-%d-", time.Now().UnixNano())
	runJob := func(id string) error {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: prefix + id, TaskQueue: api.TaskQueue},
			jobapi.WorkflowName, jobapi.JobInput{Once: true, Task: "read a.txt", Workspace: ws})
		if err != nil {
			return err
		}
		var res jobapi.JobResult
		if err := run.Get(ctx, &res); err != nil {
			return err
		}
		if res.Answer != "done" {
			return fmt.Errorf("job %s answered %q", id, res.Answer)
		}
		return nil
	}
	// One job per worker process first, so every process is up and polling
	// before the clock starts.
	for i := 0; i < procs; i++ {
		if err := runJob(fmt.Sprintf("warmup-%d", i)); err != nil {
			b.Fatal(err)
		}
	}

	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, b.N)
	for i := 0; i < b.N; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs <- runJob(fmt.Sprint(i))
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
}
