package activities

import (
	"go.temporal.io/sdk/activity"
)

// Registrar is what both a worker and the test environment offer.
type Registrar interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Set is every activity a worker serves, built once from its dependencies.
type Set struct {
	Model    *Model
	Tools    *Tools
	Settings *Settings
	Hooks    *Hooks
}

// Register registers the activities of the main task queue: the model, the
// file tools, hooks, settings and the session sink. Bash is not among them.
func (s Set) Register(r Registrar) {
	reg := func(fn any, name string) { r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name}) }
	reg(s.Model.Chat, ModelActivity)
	reg(s.Model.Compact, CompactActivity)
	reg(s.Tools.Read, ReadActivity)
	reg(s.Tools.Glob, GlobActivity)
	reg(s.Tools.Grep, GrepActivity)
	reg(s.Tools.Write, WriteActivity)
	reg(s.Tools.Edit, EditActivity)
	reg(s.Tools.Preview, PreviewActivity)
	reg(s.Hooks.RunHooks, HooksActivity)
	reg(s.Settings.LoadSettings, LoadSettingsActivity)
	reg(s.Settings.PersistRule, PersistRuleActivity)
	reg(s.Settings.BashLane, BashLaneActivity)
	reg(SaveSession, SaveSessionActivity)
}

// RegisterBash registers Bash, for a single-concurrency Bash lane.
func (s Set) RegisterBash(r Registrar) {
	r.RegisterActivityWithOptions(s.Tools.Bash, activity.RegisterOptions{Name: BashActivity})
}
