package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/retention"
	"github.com/custos-dev/custos/sandbox/provision"
	"github.com/custos-dev/custos/settingsfile"
)

// EnvGC set to 0 turns off the worker's hourly collection of its state
// directory (`starter gc` still runs by hand).
const EnvGC = "CUSTOS_GC"

// gcEvery is how often a worker collects; gcFirst is how long after it
// starts it first does, so a worker restarted often still collects while
// one starting up does not spend its first seconds walking the state.
const (
	gcEvery = time.Hour
	gcFirst = 5 * time.Minute
)

// OpenJobs lists the IDs of the jobs still open (running workflows, a
// conversation waiting for its next message included). An error means
// they are unknown: the caller must then remove no job file.
func OpenJobs(ctx context.Context, c client.Client) (map[string]bool, error) {
	open := map[string]bool{}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: `ExecutionStatus="Running"`, NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("listing open jobs: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			open[e.GetExecution().GetWorkflowId()] = true
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return open, nil
		}
	}
}

// GCOptions are one collection's.
type GCOptions struct {
	// State is the state directory ("" : statedir.Dir); UserConfigDir
	// where the user's settings (their retention) are ("" : os.UserConfigDir).
	State, UserConfigDir string
	DryRun               bool
	Cursor               retention.Cursor
	Limits               retention.Limits
}

// GCReport is what one collection planned and did.
type GCReport struct {
	State  string           `json:"state"`
	Policy retention.Policy `json:"policy"`
	Plan   retention.Plan   `json:"plan"`
	Result retention.Result `json:"result"`
	// OpenJobsError says why the open jobs are unknown (no job file was
	// then considered).
	OpenJobsError string `json:"openJobsError,omitempty"`
}

// CollectState runs one bounded pass of the state directory's
// collection: the user's retention, the open jobs from c (nil, or a
// server that does not answer: no job file goes), then the plan, applied
// unless DryRun.
func CollectState(ctx context.Context, c client.Client, o GCOptions) (GCReport, error) {
	var rep GCReport
	var err error
	if rep.State = o.State; rep.State == "" {
		if rep.State, err = statedir.Dir(); err != nil {
			return rep, err
		}
	}
	cfg := o.UserConfigDir
	if cfg == "" {
		cfg, _ = os.UserConfigDir()
	}
	loaded, err := settingsfile.Load(cfg, "")
	if err != nil {
		// A broken settings file might hide a longer retention: remove nothing.
		return rep, fmt.Errorf("gc: %w", err)
	}
	rep.Policy = retention.FromSettings(loaded.Settings.Retention)
	in := retention.Input{State: rep.State, Now: time.Now(), Policy: rep.Policy, Limits: o.Limits, Cursor: o.Cursor}
	if c == nil {
		rep.OpenJobsError = "no Temporal server"
	} else if in.Open, err = OpenJobs(ctx, c); err != nil {
		rep.OpenJobsError = err.Error()
	} else {
		in.OpenKnown = true
	}
	if rep.Plan, err = retention.PlanPass(in); err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	if !o.DryRun {
		rep.Result = retention.Apply(rep.Plan, provision.RemoveIdleCache)
	}
	return rep, nil
}

// startGC runs CollectState in the background, one bounded pass an hour
// (each going on where the last stopped), unless EnvGC is 0. The returned
// func stops it.
func startGC(c client.Client, o Options) func() {
	if os.Getenv(EnvGC) == "0" {
		o.Logger.Info("state collection off", "env", EnvGC)
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var cur retention.Cursor
		t := time.NewTimer(gcFirst)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			cur = gcPass(ctx, c, o, cur)
			t.Reset(gcEvery)
		}
	}()
	return func() { cancel(); <-done }
}

// gcPass is one background pass, logged; it returns where the next goes on.
func gcPass(ctx context.Context, c client.Client, o Options, cur retention.Cursor) retention.Cursor {
	start := time.Now()
	rep, err := CollectState(ctx, c, GCOptions{State: o.StateDir, UserConfigDir: o.UserConfigDir, Cursor: cur})
	if err != nil {
		o.Logger.Warn("state collection", "error", err)
		return cur
	}
	removed := 0
	for _, n := range rep.Result.Removed {
		removed += n
	}
	attrs := []any{"removed", removed,
		"freed", rep.Result.Bytes(), "examined", rep.Plan.Examined, "done", rep.Plan.Done,
		"took", time.Since(start).Round(time.Millisecond)}
	if rep.OpenJobsError != "" {
		attrs = append(attrs, "jobFilesKept", rep.OpenJobsError)
	}
	if len(rep.Result.Errors) > 0 {
		attrs = append(attrs, "errors", rep.Result.Errors)
	}
	o.Logger.Log(ctx, slog.LevelInfo, "state collection", attrs...)
	return rep.Plan.Next
}
