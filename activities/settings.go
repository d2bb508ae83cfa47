package activities

import (
	"context"
	"fmt"
	"os"

	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/sandbox"
)

// LoadSettingsRequest names the workspace whose settings a job uses.
type LoadSettingsRequest struct {
	Workspace string `json:"workspace"`
}

// LoadSettingsResult is the merged settings plus what layers 1-3 need to know
// about the machine, recorded in history so the workflow stays deterministic.
type LoadSettingsResult struct {
	Settings approval.Settings `json:"settings"`
	Env      approval.Env      `json:"env"`
	Sources  []string          `json:"sources,omitempty"`
	// Trusted tells whether the workspace's own settings were taken in full;
	// Ignored names what they asked for and did not get (approval.Load).
	Trusted bool     `json:"trusted"`
	Ignored []string `json:"ignored,omitempty"`
	// Notifiers name the channels this worker announces pending calls on.
	Notifiers []string `json:"notifiers,omitempty"`
	// BashQueue is the lane of the workspace (see BashLaneQueue).
	BashQueue string `json:"bashQueue,omitempty"`
	// ContextWindow is the worker's model's context window in tokens.
	ContextWindow int `json:"contextWindow,omitempty"`
}

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
func (s *Settings) LoadSettings(ctx context.Context, req LoadSettingsRequest) (LoadSettingsResult, error) {
	ws, err := sandbox.CanonicalWorkspace(req.Workspace)
	if err != nil {
		return LoadSettingsResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "WorkspaceError", err)
	}
	dir := s.UserConfigDir
	if dir == "" {
		if dir, err = os.UserConfigDir(); err != nil {
			dir = ""
		}
	}
	loaded, err := approval.Load(dir, ws)
	if err != nil {
		return LoadSettingsResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "SettingsError", err)
	}
	settings := loaded.Settings
	home, _ := os.UserHomeDir()
	env := approval.Env{Workspace: ws, Home: home, Sandbox: sandboxStatus(s.Sandbox, settings.Sandbox)}
	// Compile here too, so a malformed rule fails the job's first activity
	// with the file's name rather than later inside the workflow.
	if _, err := approval.Compile(settings, env); err != nil {
		return LoadSettingsResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "SettingsError", err)
	}
	return LoadSettingsResult{Settings: settings, Env: env, Sources: loaded.Sources, Trusted: loaded.Trusted, Ignored: loaded.Ignored,
		Notifiers: s.Notifiers, BashQueue: BashLaneQueue(s.Host, ws, s.lanes()),
		ContextWindow: s.ContextWindow}, nil
}

// PersistRuleRequest is an Always/Never answer to save.
type PersistRuleRequest struct {
	Workspace string `json:"workspace"`
	List      string `json:"list"`
	Rule      string `json:"rule"`
}

// PersistRule writes a learned rule to .custos/settings.local.json
// (idempotent: a rule already there is not added twice).
func (s *Settings) PersistRule(ctx context.Context, req PersistRuleRequest) error {
	if err := approval.AddRule(req.Workspace, req.List, req.Rule); err != nil {
		return fmt.Errorf("persist %s rule %q: %w", req.List, req.Rule, err)
	}
	return nil
}
