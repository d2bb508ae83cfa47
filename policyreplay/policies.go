package policyreplay

import (
	"fmt"
	"path/filepath"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/settingsfile"
)

// Policies gives, for a workspace, the settings a job there is given now
// (Current: for what old records do not say, and the hooks they ran with)
// and under the proposal (Proposed). Both are merged settings, as a job's
// LoadSettings merges them; system rules are added when they are compiled.
type Policies interface {
	Current(ws string) (approval.Settings, error)
	Proposed(ws string) (approval.Settings, error)
}

// Fixed is Policies with the same two settings for every workspace (tests,
// benchmarks, and a proposal meant to be judged alone).
type Fixed struct{ Now, New approval.Settings }

func (f Fixed) Current(string) (approval.Settings, error)  { return f.Now, nil }
func (f Fixed) Proposed(string) (approval.Settings, error) { return f.New, nil }

// Stand names the settings file a proposed file stands in for.
type Stand string

const (
	// StandProject: the workspace's shared .custos/settings.json, what a
	// team commits and would gate in CI (the default).
	StandProject Stand = "project"
	// StandLocal: the workspace's .custos/settings.local.json.
	StandLocal Stand = "local"
	// StandUser: the user's own settings.json.
	StandUser Stand = "user"
	// StandAlone: the proposed file and nothing else, as if it were the
	// user's only settings file.
	StandAlone Stand = "alone"
)

// ParseStand parses --as.
func ParseStand(s string) (Stand, error) {
	switch Stand(s) {
	case "", StandProject:
		return StandProject, nil
	case StandLocal, StandUser, StandAlone:
		return Stand(s), nil
	}
	return "", fmt.Errorf("unknown --as %q (want project, local, user or alone)", s)
}

// Proposal is a proposed settings file and the files a job would merge
// it with: the settings of each workspace are built by settingsfile's own
// merge (settingsfile.LoadWith), the proposal in place of the file it
// stands for, trust and the user-only settings applied as for a job.
type Proposal struct {
	// Name is the proposed file's path, for errors; Data its content.
	Name string
	Data []byte
	As   Stand
	// UserConfigDir is the user's config directory ("" for none).
	UserConfigDir string
	// Ignored, when set, is told what a workspace's trust leaves out of
	// the proposal there (an untrusted workspace's files only narrow), as
	// a job would leave it out.
	Ignored func(ws string, what []string)
}

// Check parses the proposed file alone, so a broken one is refused with
// its own name before anything is replayed.
func (p Proposal) Check() error {
	if _, err := approval.ParseSettings(p.Data, ""); err != nil {
		return fmt.Errorf("proposed settings %s: %w", p.Name, err)
	}
	return nil
}

// Current is what a job in ws is given now.
func (p Proposal) Current(ws string) (approval.Settings, error) {
	l, err := settingsfile.Load(p.UserConfigDir, ws)
	if err != nil {
		return approval.Settings{}, fmt.Errorf("current settings of %s: %w", ws, err)
	}
	return l.Settings, nil
}

// Proposed is what a job in ws would be given with the proposal.
func (p Proposal) Proposed(ws string) (approval.Settings, error) {
	if p.As == StandAlone {
		s, err := approval.ParseSettings(p.Data, ws)
		if err != nil {
			return approval.Settings{}, fmt.Errorf("proposed settings %s: %w", p.Name, err)
		}
		return s, nil
	}
	given := map[string][]byte{}
	switch p.As {
	case StandUser:
		if p.UserConfigDir == "" {
			return approval.Settings{}, fmt.Errorf("proposed settings %s: --as user needs the user's config directory", p.Name)
		}
		given[settingsfile.UserFile(p.UserConfigDir)] = p.Data
	case StandLocal:
		given[filepath.Join(ws, ".custos", "settings.local.json")] = p.Data
	default:
		given[filepath.Join(ws, ".custos", "settings.json")] = p.Data
	}
	l, err := settingsfile.LoadWith(p.UserConfigDir, ws, given)
	if err != nil {
		return approval.Settings{}, fmt.Errorf("proposed settings %s for %s: %w", p.Name, ws, err)
	}
	if p.Ignored != nil && len(l.Ignored) > 0 {
		p.Ignored(ws, l.Ignored)
	}
	return l.Settings, nil
}

// Settled is Policies with no proposal: each workspace's settings as they
// are now, for `policy suggest` and `audit stats`.
type Settled struct{ UserConfigDir string }

func (s Settled) Current(ws string) (approval.Settings, error) {
	l, err := settingsfile.Load(s.UserConfigDir, ws)
	if err != nil {
		return approval.Settings{}, fmt.Errorf("current settings of %s: %w", ws, err)
	}
	return l.Settings, nil
}

func (s Settled) Proposed(ws string) (approval.Settings, error) { return s.Current(ws) }
