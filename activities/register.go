package activities

import (
	"go.temporal.io/sdk/activity"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/model"
)

// Registrar is what both a worker and the test environment offer.
type Registrar interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Set is every activity a worker serves, built once from its dependencies.
type Set struct {
	Model    *model.Model
	Tools    *Tools
	Settings *Settings
	Hooks    *Hooks
	// MCP serves the workspace's MCP servers; nil: none on this worker.
	MCP *MCP
}

// Register registers the activities of the main task queue: the model, the
// file tools, hooks, settings and the session sink. Bash is not among them.
func (s Set) Register(r Registrar) {
	reg := func(fn any, name string) { r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name}) }
	reg(s.Model.Chat, api.ModelActivity)
	reg(s.Model.Compact, api.CompactActivity)
	reg(s.Tools.Read, api.ReadActivity)
	reg(s.Tools.Glob, api.GlobActivity)
	reg(s.Tools.Grep, api.GrepActivity)
	reg(s.Tools.LSP, api.LSPActivity)
	reg(s.Tools.Write, api.WriteActivity)
	reg(s.Tools.Edit, api.EditActivity)
	reg(s.Tools.Preview, api.PreviewActivity)
	reg(s.Hooks.RunHooks, api.HooksActivity)
	reg(s.Settings.LoadSettings, api.LoadSettingsActivity)
	reg(s.Settings.PersistRule, api.PersistRuleActivity)
	reg(s.Settings.BashLane, api.BashLaneActivity)
	reg(s.Settings.VerifyAnswer, api.VerifyAnswerActivity)
	reg(s.Settings.WorkspaceGrants, api.WorkspaceGrantsActivity)
	reg(s.Settings.AddWorkspaceGrant, api.AddWorkspaceGrantActivity)
	reg(s.Settings.EndWorkspaceGrant, api.EndWorkspaceGrantActivity)
	reg(SaveSession, api.SaveSessionActivity)
	reg(CutTranscript, api.CutTranscriptActivity)
	if s.MCP != nil {
		reg(s.MCP.Tools, api.MCPToolsActivity)
		reg(s.MCP.Call, api.MCPCallActivity)
		reg(s.MCP.ForgetJob, api.MCPForgetJobActivity)
	}
}

// RegisterBash registers Bash, for a single-concurrency Bash lane.
func (s Set) RegisterBash(r Registrar) {
	r.RegisterActivityWithOptions(s.Tools.Bash, activity.RegisterOptions{Name: api.BashActivity})
}
