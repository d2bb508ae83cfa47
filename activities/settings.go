package activities

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/mcpservers"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/pathguard"
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
	// StateDir overrides custos' state directory (statedir.Dir), where the
	// jobs' transcripts and audits are kept.
	StateDir string

	// The workers' answer key (answers.go), read on first use.
	keyOnce sync.Once
	key     []byte
	keyErr  error
}

// LoadSettings merges the user's and the workspace's settings. A broken file
// is a non-retryable error: a job must not start with an empty policy.
func (s *Settings) LoadSettings(ctx context.Context, req api.LoadSettingsRequest) (api.LoadSettingsResult, error) {
	ws, err := pathguard.CanonicalWorkspace(req.Workspace)
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
	env := approval.Env{Workspace: ws, Home: home, Sandbox: sandboxStatus(s.Sandbox, settings.Sandbox, ws),
		Private: s.privateIn(ws, dir)}
	// Compile here too, so a malformed rule fails the job's first activity
	// with the file's name rather than later inside the workflow.
	p, err := approval.Compile(settings, env)
	if err != nil {
		return api.LoadSettingsResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "SettingsError", err)
	}
	files, err := s.jobFiles(ws, req.JobID)
	if err != nil {
		return api.LoadSettingsResult{}, err
	}
	readDeny, _ := p.SandboxDenies()
	res := api.LoadSettingsResult{Settings: settings, Env: env, Sources: loaded.Sources, Trusted: loaded.Trusted, Ignored: loaded.Ignored,
		Notifiers: s.Notifiers, BashQueue: api.BashLaneQueue(s.Host, ws, s.lanes()),
		ContextWindow: s.ContextWindow, Files: files,
		Instructions: loadInstructions(dir, ws, req.WorkDir, readDeny), Host: hostFacts(ws)}
	res.MCPServers, res.MCPNotes = s.mcpServers(dir, ws)
	s.editorServers(&res, req)
	res.Subagents, res.SubagentNotes = loadSubagents(dir, ws, loaded.Trusted, settings)
	if req.Resume && req.JobID != "" {
		if res.Resumed, err = resumed(files.Or(ws, req.JobID)); err != nil {
			return api.LoadSettingsResult{}, err
		}
	}
	return res, nil
}

// privateIn are custos' own directories (the state directory, the user's
// custos settings under userConfig) that lie inside the workspace ws, by
// their real names.
func (s *Settings) privateIn(ws, userConfig string) []string {
	var dirs []string
	if d, err := s.stateDir(); err == nil {
		dirs = append(dirs, d)
	}
	if userConfig != "" {
		dirs = append(dirs, filepath.Join(userConfig, "custos"))
	}
	var in []string
	for _, d := range dirs {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real
		}
		if _, ok := hostfs.Within(ws, d); ok {
			in = append(in, d)
		}
	}
	return in
}

func (s *Settings) stateDir() (string, error) {
	if s.StateDir != "" {
		return s.StateDir, nil
	}
	return statedir.Dir()
}

// jobFiles names (and makes, owner-only) the directory of a job's
// transcript and audit in the state directory. A workspace's directory
// there also holds a file naming the workspace, for people looking.
func (s *Settings) jobFiles(ws, jobID string) (api.JobFiles, error) {
	if jobID == "" {
		return api.JobFiles{}, nil
	}
	state, err := s.stateDir()
	if err != nil {
		return api.JobFiles{}, fmt.Errorf("job files: %w", err)
	}
	dir := statedir.WorkspaceDirIn(state, ws)
	files := api.JobFilesIn(dir, jobID)
	for _, d := range []string{filepath.Dir(files.Transcript), filepath.Dir(files.Audit)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return api.JobFiles{}, fmt.Errorf("job files: %w", err)
		}
	}
	name := filepath.Join(dir, "workspace")
	if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(name, []byte(ws+"\n"), 0o600); err != nil {
			return api.JobFiles{}, fmt.Errorf("job files: %w", err)
		}
	}
	return files, nil
}

// PersistRule writes a learned rule to .custos/settings.local.json
// (idempotent: a rule already there is not added twice).
func (s *Settings) PersistRule(ctx context.Context, req api.PersistRuleRequest) error {
	if err := settingsfile.AddRule(req.Workspace, req.List, req.Rule); err != nil {
		return fmt.Errorf("persist %s rule %q: %w", req.List, req.Rule, err)
	}
	return nil
}

// mcpServers names the workspace's MCP servers and what was left out. A
// failure to read them leaves the job without servers, and says why.
func (s *Settings) mcpServers(userConfig, ws string) ([]string, []string) {
	state, err := s.stateDir()
	if err != nil {
		return nil, []string{"MCP servers: " + err.Error()}
	}
	cfg, _, err := mcpservers.Load(userConfig, state, ws)
	if err != nil {
		return nil, []string{"MCP servers left out: " + err.Error()}
	}
	var names []string
	for _, srv := range cfg.Servers {
		names = append(names, srv.Name)
	}
	return names, cfg.Notes
}
