package workflows

import (
	"errors"
	"fmt"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
)

// defaultLaneWait is how long a Bash call may wait to start on its lane
// before the job asks the host for the lane again.
const defaultLaneWait = 2 * time.Minute

// runBash runs a Bash call on the lane of the job's workspace. The lane is
// chosen by the host (LoadSettings at the start, or BashLane) and recorded,
// so replay routes every call the same way. A call that does not start
// within the lane wait never ran, so it is safe to send again: the job asks
// the host for the lane (a worker that came back with another lane count
// names another lane) and sends it there. A busy lane just gets it again.
func (j *job) runBash(ctx workflow.Context, opts workflow.ActivityOptions, req api.ToolRequest) (api.ToolResult, error) {
	if workflow.GetVersion(ctx, "bash-lanes", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		// Recorded before lanes: one Bash queue for the worker.
		opts.TaskQueue = api.BashTaskQueue
		var res api.ToolResult
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), api.BashActivity, req).Get(ctx, &res)
		return res, err
	}
	opts.ScheduleToStartTimeout = j.in.LaneWait
	if opts.ScheduleToStartTimeout <= 0 {
		opts.ScheduleToStartTimeout = defaultLaneWait
	}
	for {
		if j.st.BashQueue == "" {
			if err := j.resolveLane(ctx); err != nil {
				return api.ToolResult{}, err
			}
		}
		opts.TaskQueue = j.st.BashQueue
		var res api.ToolResult
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), api.BashActivity, req).Get(ctx, &res)
		var te *temporal.TimeoutError
		if err == nil || !errors.As(err, &te) || te.TimeoutType() != enums.TIMEOUT_TYPE_SCHEDULE_TO_START || ctx.Err() != nil {
			return res, err
		}
		j.emit(ctx, Event{Kind: "lane", CallID: req.CallID, Tool: api.BashActivity,
			Text: fmt.Sprintf("not started on %s within %s; asking the host for the lane again", j.st.BashQueue, opts.ScheduleToStartTimeout)})
		j.st.BashQueue = ""
	}
}

// resolveLane asks the host which lane serves the workspace now.
func (j *job) resolveLane(ctx workflow.Context) error {
	actx := j.onHost(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		Summary:             "which Bash lane",
	})
	var q string
	if err := workflow.ExecuteActivity(actx, api.BashLaneActivity,
		api.BashLaneRequest{Workspace: j.in.Workspace}).Get(ctx, &q); err != nil {
		return fmt.Errorf("choose a Bash lane: %w", err)
	}
	j.st.BashQueue = q
	return nil
}
