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
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/retention"
	"github.com/custos-dev/custos/sandbox/provision"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// stateJobs is how many short jobs BenchmarkStateAfterShortJobs runs, and
// stateJobsAtOnce how many of them are in flight at a time: enough to keep
// the workers busy on 2 cores without a thousand workflows queued at once.
const (
	stateJobs       = 1000
	stateJobsAtOnce = 32
)

// stateCollectAfter is how far past now the collection is run: past the
// default retention of an ended job's transcript and blobs (30 days), not
// of its audit (365 days), as a worker's hourly pass a month later would.
const stateCollectAfter = 31 * 24 * time.Hour

// BenchmarkStateAfterShortJobs is the size of the state directory after
// 1,000 short jobs (one Read of a 1 KiB file, allowed by layer 2, then an
// answer) run by in-process workers on the embedded server: as they left it
// (retention off), then after the worker's collection with the default
// policy, run as if 31 days later (retention on). The jobs are setup; the
// timed part is the collection. Run once: -benchtime 1x.
func BenchmarkStateAfterShortJobs(b *testing.B) {
	// A state directory of its own, so the measure is of these jobs only.
	// XDG_STATE_HOME as well as StateDir: the sandbox's probe and
	// workspace caches and the host guard ask statedir.Dir themselves.
	xdg := b.TempDir()
	b.Setenv("XDG_STATE_HOME", xdg)
	// The worker's own background collection must not run in the middle
	// (it would find nothing old, but it would walk the directory).
	b.Setenv(app.EnvGC, "0")
	state := filepath.Join(xdg, "custos")

	srv := testenv.StartServer(b, devserver.Options{UIPort: -1})
	c := testenv.Dial(b, srv)
	_, base := testenv.StartModel(b, answerByTask)
	testenv.StartWorkers(b, c, base, app.Options{StateDir: state})
	ws := testenv.Workspace(b)
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte(strings.Repeat("alpha beta gamma delta\n", 45)), 0o644); err != nil {
		b.Fatal(err)
	}

	// The server's and workers' start are setup, not the collection.
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		start := time.Now()
		runShortJobs(b, c, ws, fmt.Sprintf("state-%d-%d-", time.Now().UnixNano(), i))
		b.Logf("%d jobs in %s", stateJobs, time.Since(start).Round(time.Second))
		before := measureState(b, state)
		b.StartTimer()
		start = time.Now()
		removed := collectStateLater(b, c, state)
		took := time.Since(start)
		b.StopTimer()
		b.ReportMetric(took.Seconds(), "s-collection")
		after := measureState(b, state)
		logStateKinds(b, before, after, removed)
		reportState(b, before, "before")
		reportState(b, after, "after")
	}
}

// answerByTask reads a.txt for the task, then answers with the task's own
// job number once it has the file, so every job checks it got its answer.
func answerByTask(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	var task string
	for _, m := range req.Messages {
		switch m.Role {
		case openai.ChatMessageRoleUser:
			// The task, not whatever other user message a job may carry.
			if strings.Contains(m.Content, "job #") {
				task = m.Content
			}
		case openai.ChatMessageRoleTool:
			_, n, _ := strings.Cut(task, "#")
			return demomodel.Say("read it for job " + n), nil
		}
	}
	return demomodel.Calls(demomodel.ToolCall("r1", "Read", map[string]any{"file_path": "a.txt"})), nil
}

// runShortJobs runs stateJobs one-shot jobs, stateJobsAtOnce at a time,
// and fails b unless each ended with its own answer.
func runShortJobs(b *testing.B, c client.Client, ws, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	sem := make(chan struct{}, stateJobsAtOnce)
	errs := make(chan error, stateJobs)
	var wg sync.WaitGroup
	for i := range stateJobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs <- runShortJob(ctx, c, prefix+fmt.Sprint(i), ws, fmt.Sprint(i))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

func runShortJob(ctx context.Context, c client.Client, id, ws, n string) error {
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: api.TaskQueue},
		jobapi.WorkflowName, jobapi.JobInput{Once: true, Task: "read a.txt, job #" + n, Workspace: ws})
	if err != nil {
		return fmt.Errorf("starting job %s: %w", id, err)
	}
	var res jobapi.JobResult
	if err := run.Get(ctx, &res); err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	if want := "read it for job " + n; res.Answer != want {
		return fmt.Errorf("job %s answered %q, want %q", id, res.Answer, want)
	}
	return nil
}

// collectStateLater is app.CollectState with its clock moved on by
// stateCollectAfter (CollectState takes time.Now itself): the open jobs
// from the server (none: every job ended), the default policy, then
// bounded passes planned and applied until one reaches the end, as the
// worker's hourly passes would in turn. It returns the files removed per
// kind.
func collectStateLater(b *testing.B, c client.Client, state string) map[retention.Kind]int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open, err := app.OpenJobs(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	if len(open) != 0 {
		b.Fatalf("%d jobs still open after all ended", len(open))
	}
	in := retention.Input{State: state, Now: time.Now().Add(stateCollectAfter),
		Policy: retention.FromSettings(approval.RetentionSettings{}), Open: open, OpenKnown: true}
	removed := map[retention.Kind]int{}
	for {
		p, err := retention.PlanPass(in)
		if err != nil {
			b.Fatal(err)
		}
		r := retention.Apply(p, provision.RemoveIdleCache)
		// Nothing changed since the plan and no command holds a cache: an
		// error or a skipped entry would make the figure a wrong one.
		if len(r.Errors) > 0 || len(r.Skipped) > 0 {
			b.Fatalf("collection: errors %v, skipped %v", r.Errors, r.Skipped)
		}
		for k, n := range r.Removed {
			removed[k] += n
		}
		if p.Done {
			return removed
		}
		in.Cursor = p.Next
	}
}

// stateUsage is a measure of the state directory with its files per kind
// summed over the workspaces (Usage keeps them per workspace only).
type stateUsage struct {
	retention.Usage
	files map[retention.Kind]int
}

func (u stateUsage) allFiles() int {
	n := 0
	for _, f := range u.files {
		n += f
	}
	return n
}

func measureState(b *testing.B, state string) stateUsage {
	u, err := retention.Measure(state, true)
	if err != nil {
		b.Fatal(err)
	}
	s := stateUsage{Usage: u, files: map[retention.Kind]int{}}
	for _, w := range u.Workspaces {
		for k, n := range w.Files {
			s.files[k] += n
		}
	}
	return s
}

// logStateKinds logs the measures per kind, which would make too many
// columns as metrics.
func logStateKinds(b *testing.B, before, after stateUsage, removed map[retention.Kind]int) {
	for _, k := range retention.Kinds {
		if before.Kinds[k] == 0 && after.Kinds[k] == 0 {
			continue
		}
		b.Logf("%-11s before %5d files %8.2f MiB, after %5d files %8.2f MiB (removed %d)", k,
			before.files[k], mib(before.Kinds[k]), after.files[k], mib(after.Kinds[k]), removed[k])
	}
	b.Logf("%-11s before %14.2f MiB, after %14.2f MiB", "other", mib(before.Other), mib(after.Other))
	b.Logf("%-11s before %5d files %8.2f MiB, after %5d files %8.2f MiB", "all",
		before.allFiles(), mib(before.Total), after.allFiles(), mib(after.Total))
}

func reportState(b *testing.B, u stateUsage, when string) {
	b.ReportMetric(mib(u.Total), "MiB-"+when)
	b.ReportMetric(float64(u.allFiles()), "files-"+when)
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
