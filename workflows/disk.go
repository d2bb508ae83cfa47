package workflows

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/workflows/parking"
)

// waitHost is what of the job its waits for the model endpoint and for
// disk space (workflows/parking) read and change.
func (j *job) waitHost() parking.Host {
	return parking.Host{
		State: func() *State { return j.st }, Phase: &j.phase, Disk: &j.disk, RetryNow: j.retryNow,
		Save: j.save, Audit: j.audit, UpdateDetails: j.updateDetails, ContinueAsNew: j.shouldContinueAsNew, Logger: j.logger,
		Say:      func(ctx workflow.Context, kind, text string) { j.emit(ctx, Event{Kind: kind, Text: text}) },
		Announce: j.notices().Announce, ID: j.id, WorkerHost: j.in.Host, Workspace: j.in.Workspace,
	}
}

// runTool runs an allowed call's tool, waiting while the full state
// directory refuses its record (parking.RunTool).
func (j *job) runTool(ctx workflow.Context, callID, tool string, input json.RawMessage) (api.ToolResult, error) {
	return parking.RunTool(ctx, j.waitHost(), tool, func() (api.ToolResult, error) {
		return j.executeTool(ctx, callID, tool, input)
	})
}

// askModel runs one model call, parking while the endpoint refuses or
// answers garbage (parking.Model).
func (j *job) askModel(ctx workflow.Context, call func() (api.ModelResponse, error)) (api.ModelResponse, error) {
	return parking.Model(ctx, j.waitHost(), call)
}
