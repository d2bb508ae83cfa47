// Package worktrees gives a Task call's child (isolation "worktree") a git
// worktree of its own, made on the workspace's host. It never imports
// workflows.
package worktrees

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/workflows/subagent"
)

// taskWorktreeVersion marks histories recorded since isolation "worktree"
// gives a child a git worktree of its own; before, such a call was
// refused as not available.
const taskWorktreeVersion = "task-worktree"

// IsolationRefused says why a Task call's isolation cannot be had ("" for
// none asked, or "worktree" in a history that has it).
func IsolationRefused(ctx workflow.Context, isolation string) string {
	if isolation == "" {
		return ""
	}
	if workflow.GetVersion(ctx, taskWorktreeVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return fmt.Sprintf("Task: isolation %q is not available in this release; run it without isolation", isolation)
	}
	if isolation != api.IsolationWorktree {
		return fmt.Sprintf("Task: isolation %q is unknown; the one there is is %q", isolation, api.IsolationWorktree)
	}
	return ""
}

// Make has the workspace's host (onHost) make the child's git worktree.
// tasks are the job's children, workspace its workspace. One
// is made at a time, each avoiding the Bash lanes of the job's workspace
// and of its running children's worktrees, so the child's commands run
// beside theirs (as far as the host's lane count goes).
func Make(ctx workflow.Context, onHost func(workflow.Context, workflow.ActivityOptions) workflow.Context,
	tasks *subagent.Tasks, workspace, childID string) (*api.WorktreeResult, error) {
	if err := workflow.Await(ctx, func() bool { return !tasks.Worktree }); err != nil {
		return nil, err
	}
	tasks.Worktree = true
	defer func() { tasks.Worktree = false }()
	req := api.WorktreeRequest{Workspace: workspace, Child: childID, Avoid: []string{workspace}}
	for _, c := range tasks.List() {
		if c.Workspace != "" {
			req.Avoid = append(req.Avoid, c.Workspace)
		}
	}
	actx := onHost(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary:             "git worktree for " + childID,
	})
	var res api.WorktreeResult
	if err := workflow.ExecuteActivity(actx, api.WorktreeActivity, req).Get(ctx, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Failed is the Task call's result when its worktree was refused
// or could not be made; the parent's interrupt or end stays an error.
func Failed(ctx workflow.Context, wt *api.WorktreeResult, err error) (api.ToolResult, error) {
	if err != nil {
		if ctx.Err() != nil {
			return api.ToolResult{}, err
		}
		return api.ToolResult{IsError: true, Output: fmt.Sprintf("Task: the git worktree could not be made: %v", err)}, nil
	}
	return api.ToolResult{IsError: true, Output: wt.Refused}, nil
}
