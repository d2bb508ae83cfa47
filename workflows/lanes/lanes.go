// Package lanes runs a job's Bash calls on the lane of its workspace: the
// lane is chosen by the host (LoadSettings at the start, or BashLane) and
// recorded, so replay routes every call the same way. It never imports
// workflows; the job hands it a Host.
package lanes

import (
	"errors"
	"fmt"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// defaultWait is how long a Bash call may wait to start on its lane
// before the job asks the host for the lane again.
const defaultWait = 2 * time.Minute

// Host is what of the job a Bash call reads and changes: its state (the
// lane, State.BashQueue), how long a call may wait for its lane (0: the
// default), its workspace, where its activities run, its journal.
type Host struct {
	State     func() *jobapi.State
	Wait      time.Duration
	Workspace string
	OnHost    func(ctx workflow.Context, opts workflow.ActivityOptions) workflow.Context
	Emit      func(ctx workflow.Context, e jobapi.Event)
}

// RunBash runs a Bash call on the lane of the job's workspace. A call that
// does not start within the lane wait never ran, so it is safe to send
// again: the job asks the host for the lane (a worker that came back with
// another lane count names another lane) and sends it there. A busy lane
// just gets it again.
func RunBash(ctx workflow.Context, h Host, opts workflow.ActivityOptions, req api.ToolRequest) (api.ToolResult, error) {
	if workflow.GetVersion(ctx, "bash-lanes", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		// Recorded before lanes: one Bash queue for the worker.
		opts.TaskQueue = api.BashTaskQueue
		var res api.ToolResult
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), api.BashActivity, req).Get(ctx, &res)
		return res, err
	}
	opts.ScheduleToStartTimeout = h.Wait
	if opts.ScheduleToStartTimeout <= 0 {
		opts.ScheduleToStartTimeout = defaultWait
	}
	st := h.State()
	for {
		if st.BashQueue == "" {
			if err := resolve(ctx, h); err != nil {
				return api.ToolResult{}, err
			}
		}
		opts.TaskQueue = st.BashQueue
		var res api.ToolResult
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), api.BashActivity, req).Get(ctx, &res)
		var te *temporal.TimeoutError
		if err == nil || !errors.As(err, &te) || te.TimeoutType() != enums.TIMEOUT_TYPE_SCHEDULE_TO_START || ctx.Err() != nil {
			return res, err
		}
		h.Emit(ctx, jobapi.Event{Kind: "lane", CallID: req.CallID, Tool: api.BashActivity,
			Text: fmt.Sprintf("not started on %s within %s; asking the host for the lane again", st.BashQueue, opts.ScheduleToStartTimeout)})
		st.BashQueue = ""
	}
}

// resolve asks the host which lane serves the workspace now.
func resolve(ctx workflow.Context, h Host) error {
	actx := h.OnHost(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		Summary:             "which Bash lane",
	})
	var q string
	if err := workflow.ExecuteActivity(actx, api.BashLaneActivity,
		api.BashLaneRequest{Workspace: h.Workspace}).Get(ctx, &q); err != nil {
		return fmt.Errorf("choose a Bash lane: %w", err)
	}
	h.State().BashQueue = q
	return nil
}
