package activities

import (
	"context"
	"fmt"
	"os"

	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/settingsfile"
)

// Settings loads settings for jobs. UserConfigDir overrides os.UserConfigDir
// (tests point it at a temp dir). Sandbox is the worker's OS sandbox, whose
// backend LoadSettings reports (nil: not known here; the Bash activity
// still refuses to run unconfined on its own).
type Settings struct {
	UserConfigDir string
	// Notifiers name the worker's configured channels (slack, webhook).
	Notifiers []string
	// BashLanes is how many Bash lanes the workers of this host serve
	// (0: DefaultBashLanes).
	BashLanes int
	// ContextWindow is the worker's model's context window in tokens.
	ContextWindow int
	// Host names this worker's host ("" for none), for its lane names.
	Host    string
	Sandbox sandbox.Sandbox
}

// LoadSettings merges the user's and the workspace's settings. A broken file
// is a non-retryable error: a job must not start with an empty policy.
func (s *Settings) LoadSettings(ctx context.Context, req api.LoadSettingsRequest) (api.LoadSettingsResult, error) {
	ws, err := sandbox.CanonicalWorkspace(req.Workspace)
	if err != nil {
		return api.LoadSettingsResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "WorkspaceError", err)
	}
	dir := s.UserConfigDir
	if dir == "" {
		if dir, err = os.UserConfigDir(); err != nil {
			dir = ""
		}
	}
	loaded, err := settingsfile.Load(dir, ws)
	if err != nil {
		return api.LoadSettingsResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "SettingsError", err)
	}
	settings := loaded.Settings
	home, _ := os.UserHomeDir()
	env := approval.Env{Workspace: ws, Home: home, Sandbox: sandboxStatus(s.Sandbox, settings.Sandbox, ws)}
	// Compile here too, so a malformed rule fails the job's first activity
	// with the file's name rather than later inside the workflow.
	if _, err := approval.Compile(settings, env); err != nil {
		return api.LoadSettingsResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "SettingsError", err)
	}
	return api.LoadSettingsResult{Settings: settings, Env: env, Sources: loaded.Sources, Trusted: loaded.Trusted, Ignored: loaded.Ignored,
		Notifiers: s.Notifiers, BashQueue: api.BashLaneQueue(s.Host, ws, s.lanes()),
		ContextWindow: s.ContextWindow}, nil
}

// PersistRule writes a learned rule to .custos/settings.local.json
// (idempotent: a rule already there is not added twice).
func (s *Settings) PersistRule(ctx context.Context, req api.PersistRuleRequest) error {
	if err := settingsfile.AddRule(req.Workspace, req.List, req.Rule); err != nil {
		return fmt.Errorf("persist %s rule %q: %w", req.List, req.Rule, err)
	}
	return nil
}
