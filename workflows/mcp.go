package workflows

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/editorjob"
	"github.com/custos-dev/custos/workflows/mcpcalls"
)

// mcpHost is what of the job its MCP tools (workflows/mcpcalls) read and
// change.
func (j *job) mcpHost() mcpcalls.Host {
	return mcpcalls.Host{
		State:    func() *State { return j.st },
		ReadDeny: func() []string { d, _ := j.policy.SandboxDenies(); return d },
		EditDeny: func() []string { _, d := j.policy.SandboxDenies(); return d },
		OnHost:   j.onHost, Workspace: j.in.Workspace, Job: editorjob.Job(j.in, j.id), Audit: j.audit,
		Say: func(ctx workflow.Context, tool, text string) { j.emit(ctx, Event{Kind: "mcp", Tool: tool, Text: text}) },
	}
}

// refuseInvalidMCPArguments refuses, before anyone is asked, arguments the
// tool's input schema does not accept. The check's outcome is recorded
// (a side effect), so a later release's schema library cannot change a
// replayed decision.
func refuseInvalidMCPArguments(ctx workflow.Context, t api.MCPTool, input json.RawMessage, layer approval.Layer) (approval.Verdict, bool) {
	var why string
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		if err := api.CheckMCPArguments(t.InputSchema, input); err != nil {
			return err.Error()
		}
		return ""
	}).Get(&why)
	if why == "" {
		return approval.Verdict{}, false
	}
	return argumentsRefusal(layer, t.Name+" (its input schema)", why), true
}
