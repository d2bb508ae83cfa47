package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
)

// onHost sets the activity options of work that touches the workspace: it
// runs on the task queue of the host that holds it (JobInput.Host), chosen
// when the job started and carried across continue-as-new, so no call runs
// on another host; while that host's worker is away the job waits for it.
// A job with no host runs them on the shared queue, as single-host
// deployments do.
func (j *job) onHost(ctx workflow.Context, opts workflow.ActivityOptions) workflow.Context {
	if j.in.Host != "" {
		opts.TaskQueue = api.HostQueue(j.in.Host)
	}
	return workflow.WithActivityOptions(ctx, opts)
}

// saveActivity writes the transcript and audit: a local activity when the
// workflow's worker holds the workspace (no host given), else an activity on
// the workspace's host.
func (j *job) saveActivity(ctx workflow.Context, req api.SaveSessionRequest) error {
	if j.in.Host == "" {
		// A local activity: a short append on the worker that runs the
		// workflow, without a round trip through the server every turn.
		// It is called by name, as registered with the worker's other
		// activities, so workflow code holds no reference to the code
		// that writes files (the name is the one the function had).
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: 30 * time.Second,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
		})
		return workflow.ExecuteLocalActivity(lctx, api.SaveSessionActivity, req).Get(ctx, nil)
	}
	actx := j.onHost(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
		Summary:             "save the transcript",
	})
	return workflow.ExecuteActivity(actx, api.SaveSessionActivity, req).Get(ctx, nil)
}
