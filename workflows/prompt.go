package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/prompts"
)

// systemPrompt is the job's first message (prompts.System), with a
// subagent's part.
func (j *job) systemPrompt(ctx workflow.Context, loaded api.LoadSettingsResult) string {
	return prompts.System(j.in.Workspace, j.in.WorkDir, workflow.Now(ctx), loaded, prompts.Subagent(j.in.Parent))
}

// announceInstructions records, once per job, which instruction files the
// model was given and how much of each, and which were skipped and why.
func (j *job) announceInstructions(ctx workflow.Context, in api.Instructions) {
	if text := prompts.Instructions(in); text != "" {
		j.audit(ctx, approval.AuditRecord{Event: "instructions", Reason: text})
		j.emit(ctx, Event{Kind: "instructions", Text: text})
	}
}
