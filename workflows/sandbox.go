package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/prompts"
)

// withSandboxRules adds to a tool request what the tool enforces of the
// policy by itself, because a rule on files must hold whichever tool touches
// them: Bash gets the Read and Edit deny patterns for the sandbox, and is
// marked unconfined when the worker has no sandbox and the user allowed that
// (the policy then sent the call to a person, told so); Glob and Grep get the
// Read deny patterns to leave masked files out, LSP to leave out what a
// language server answers from them (and the settings' servers); Read, Write and Edit check
// the real path they touch (a symlink or hard link may lead to a denied file
// the written path does not name). The rules come from the current policy,
// learned ones included.
func (j *job) withSandboxRules(req *api.ToolRequest, tool string) {
	switch tool {
	case api.BashActivity:
		req.ReadDeny, req.EditDeny = j.policy.SandboxDenies()
		sb := j.st.Env.Sandbox
		req.Unconfined = sb.Unconfined && sb.AllowUnconfined
	case api.ReadActivity, api.GlobActivity, api.GrepActivity:
		req.ReadDeny, _ = j.policy.SandboxDenies()
	case api.LSPActivity:
		req.ReadDeny, _ = j.policy.SandboxDenies()
		req.LSP = j.st.Settings.LSP
	case api.WriteActivity, api.EditActivity:
		_, req.EditDeny = j.policy.SandboxDenies()
	}
}

// announceSandbox is the job's first event: which backend is active, and
// what the workspace's commands are given.
func (j *job) announceSandbox(ctx workflow.Context) {
	text := prompts.Sandbox(j.st.Env.Sandbox)
	for _, line := range j.st.Env.Sandbox.Gives {
		text += "\n  " + line
	}
	// The policy's facts ride on the job's first record, once, so that
	// `starter policy replay` can judge the job's calls again as it was.
	env := j.st.Env
	j.audit(ctx, approval.AuditRecord{Event: "sandbox", Reason: text, Env: &env})
	j.emit(ctx, Event{Kind: "sandbox", Text: text})
}
