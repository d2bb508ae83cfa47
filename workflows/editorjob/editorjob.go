// Package editorjob holds what the job's workflow does differently for a
// job an editor started (ACP's session/new, package acpagent): it may
// start without a task, waiting for its first message as a conversation
// waits for its next one (idle limit included), and the MCP servers the
// editor passed it (JobInput.EditorServers: names only; their entries,
// secrets included, are in a file on the host, mcpservers/editor.go)
// join its listings and are forgotten when it ends. It never imports
// workflows.
package editorjob

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// FirstMessageVersion gates a job started without a task: it waits for
// its first message instead of asking the model about an empty one.
const FirstMessageVersion = "first-message"

// ForgetVersion gates forgetting, at the job's end, the MCP servers an
// editor passed it.
const ForgetVersion = "editor-mcp"

// AwaitsFirst says whether the fresh job of in waits for its first
// message (it has no task); recorded the first time it is asked.
func AwaitsFirst(ctx workflow.Context, in jobapi.JobInput) bool {
	return in.Task == "" && in.Call == nil &&
		workflow.GetVersion(ctx, FirstMessageVersion, workflow.DefaultVersion, 1) >= 1
}

// Job is the job ID its MCP listing carries: id when an editor passed
// the job servers, else "" (the workspace's servers only).
func Job(in jobapi.JobInput, id string) string {
	if len(in.EditorServers) == 0 {
		return ""
	}
	return id
}

// Forget removes, as job id ends (not when it continues as new), the MCP
// servers an editor passed it: their entry file, which holds their
// secrets, and their running servers, on the workspace's host (onHost).
// Should that host not answer within two minutes, the file stays
// (docs/limits.md); the job ends all the same.
func Forget(ctx workflow.Context, onHost func(workflow.Context, workflow.ActivityOptions) workflow.Context, in jobapi.JobInput, id string) {
	if len(in.EditorServers) == 0 || workflow.GetVersion(ctx, ForgetVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	actx := onHost(dctx, workflow.ActivityOptions{
		StartToCloseTimeout:    time.Minute,
		ScheduleToCloseTimeout: 2 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary:                "forget the editor's MCP servers",
	})
	req := api.MCPForgetJobRequest{Workspace: in.Workspace, Job: id}
	if err := workflow.ExecuteActivity(actx, api.MCPForgetJobActivity, req).Get(dctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("the editor's MCP servers were not forgotten", "error", err)
	}
}
