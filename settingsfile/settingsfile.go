// Package settingsfile reads and writes custos' settings files — the user's
// <config>/custos/settings.json and the workspace's .custos/settings.json and
// .custos/settings.local.json — applying workspace trust, and persists
// learned rules and trusted workspaces. approval judges with what they say.
package settingsfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/custos-dev/custos/approval"
)

// Files returns the settings files Load reads, least specific first.
func Files(userConfigDir, workspace string) []string {
	var files []string
	if userConfigDir != "" {
		files = append(files, UserFile(userConfigDir))
	}
	if workspace != "" {
		files = append(files,
			filepath.Join(workspace, ".custos", "settings.json"),
			filepath.Join(workspace, ".custos", "settings.local.json"))
	}
	return files
}

// UserFile is the user's own settings file.
func UserFile(userConfigDir string) string {
	return filepath.Join(userConfigDir, "custos", "settings.json")
}

// Loaded is the outcome of reading a job's settings.
type Loaded struct {
	Settings approval.Settings `json:"settings"`
	// Sources are the files read, least specific first.
	Sources []string `json:"sources,omitempty"`
	// Trusted is true when the user's settings trust the workspace.
	Trusted bool `json:"trusted"`
	// Ignored names what untrusted workspace files asked for and did not get.
	Ignored []string `json:"ignored,omitempty"`
}

// Load reads and merges (approval.MergeSettings) the user, project and local
// settings files, applying workspace trust: an untrusted workspace's files
// only narrow what custos does (approval.Restrict), and what only the user
// may set is taken from the user's file alone (approval.UserOnly). Missing
// files are skipped; a file that exists but is broken is an error naming the
// file (never an empty policy).
func Load(userConfigDir, workspace string) (Loaded, error) {
	return LoadWith(userConfigDir, workspace, nil)
}

// LoadWith is Load with the content of some of the files (by their names in
// Files) given instead of read: `policy replay` builds a proposed policy
// exactly as a job would build it, the proposed file in place of the one
// it would replace. A file given with nil content counts as missing.
func LoadWith(userConfigDir, workspace string, given map[string][]byte) (Loaded, error) {
	var out Loaded
	trusted, err := workspaceTrusted(userConfigDir, workspace, given)
	if err != nil {
		return out, err
	}
	out.Trusted = trusted
	userFile := ""
	if userConfigDir != "" {
		userFile = UserFile(userConfigDir)
	}
	for _, f := range Files(userConfigDir, workspace) {
		data, err := readOr(f, given)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Loaded{}, fmt.Errorf("settings: reading settings %s: %w", f, err)
		}
		s, err := approval.ParseSettings(data, workspace)
		if err != nil {
			return Loaded{}, fmt.Errorf("settings: settings %s: %w", f, err)
		}
		if f != userFile {
			var dropped []string
			s, dropped = approval.UserOnly(s)
			for _, what := range dropped {
				out.Ignored = append(out.Ignored, fmt.Sprintf("%s: %s", f, what))
			}
		}
		if f != userFile && !trusted {
			var ignored []string
			s, ignored = approval.Restrict(s)
			for _, what := range ignored {
				out.Ignored = append(out.Ignored, fmt.Sprintf("%s: %s", f, what))
			}
		}
		out.Settings = approval.MergeSettings(out.Settings, s)
		out.Sources = append(out.Sources, f)
	}
	return out, nil
}

// readOr reads file f, or takes its content from given when it is there.
func readOr(f string, given map[string][]byte) ([]byte, error) {
	if data, ok := given[f]; ok {
		if data == nil {
			return nil, fs.ErrNotExist
		}
		return data, nil
	}
	return os.ReadFile(f)
}
