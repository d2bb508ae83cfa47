package settingsfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/custos-dev/custos/approval"
)

// A workspace is trusted when the user's own settings file lists it, or a
// directory above it, in trustedWorkspaces; a workspace's files cannot vouch
// for it. Why untrusted files may only narrow: see approval.Restrict.

// trustFile is the part of the user's settings.json that only it may set.
type trustFile struct {
	TrustedWorkspaces []string `json:"trustedWorkspaces"`
}

// workspaceTrusted reports whether the user's settings list the workspace, or
// a directory above it, in trustedWorkspaces.
func workspaceTrusted(userConfigDir, workspace string, given map[string][]byte) (bool, error) {
	if userConfigDir == "" || workspace == "" {
		return false, nil
	}
	list, err := trustedListOf(UserFile(userConfigDir), given)
	if err != nil {
		return false, err
	}
	ws := filepath.Clean(workspace)
	for _, t := range list {
		if ws == t || strings.HasPrefix(ws, t+string(filepath.Separator)) || t == string(filepath.Separator) {
			return true, nil
		}
	}
	return false, nil
}

func trustedList(file string) ([]string, error) { return trustedListOf(file, nil) }

// trustedListOf is trustedList with the file's content taken from given
// when it is there (LoadWith).
func trustedListOf(file string, given map[string][]byte) ([]string, error) {
	data, err := readOr(file, given)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("settings: reading settings %s: %w", file, err)
	}
	var tf trustFile
	if err := json.Unmarshal(data, &tf); err != nil {
		return nil, fmt.Errorf("settings: settings %s: %w: trustedWorkspaces: %w", file, approval.ErrBadSettings, err)
	}
	var out []string
	for _, t := range tf.TrustedWorkspaces {
		if !filepath.IsAbs(t) {
			return nil, fmt.Errorf("settings: settings %s: %w: trustedWorkspaces: %q is not an absolute path", file, approval.ErrBadSettings, t)
		}
		if real, err := filepath.EvalSymlinks(t); err == nil {
			t = real
		}
		out = append(out, filepath.Clean(t))
	}
	return out, nil
}

// Trust adds workspace to the user's trustedWorkspaces (creating the file if
// needed, keeping everything else, atomically; idempotent).
func Trust(userConfigDir, workspace string) error {
	if userConfigDir == "" {
		return errors.New("settings: no user config directory")
	}
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return fmt.Errorf("settings: workspace %q: %w", workspace, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	file := UserFile(userConfigDir)
	list, err := trustedList(file)
	if err != nil {
		return err
	}
	for _, t := range list {
		if t == abs {
			return nil
		}
	}
	return updateJSONFile(file, func(top map[string]json.RawMessage) error {
		var raw []string
		if r, ok := top["trustedWorkspaces"]; ok && string(r) != "null" {
			if err := json.Unmarshal(r, &raw); err != nil {
				return fmt.Errorf("trustedWorkspaces: %w", err)
			}
		}
		b, err := json.Marshal(append(raw, abs))
		if err != nil {
			return err
		}
		top["trustedWorkspaces"] = b
		return nil
	})
}
