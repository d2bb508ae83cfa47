package settingsfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/internal/atomicfile"
)

// AddRule persists a learned rule into <workspace>/.custos/settings.local.json,
// which git is told to ignore (IgnoreLocal), creating it if needed, keeping everything else in the file, adding nothing
// if the rule is already there, and replacing the file atomically.
func AddRule(workspace, list, ruleText string) error {
	err := approval.CheckRule(list, ruleText, workspace)
	if errors.Is(err, approval.ErrUnknownList) {
		return fmt.Errorf("settings: %w", err)
	}
	if workspace == "" {
		return errors.New("settings: AddRule needs a workspace")
	}
	if err != nil {
		return fmt.Errorf("settings: AddRule: %w", err)
	}
	ruleText = strings.TrimSpace(ruleText)
	// The learned rules are this checkout's: keep git from taking them.
	// Not fatal: the rule matters more than the ignore file.
	_ = IgnoreLocal(workspace)
	return addRuleTo(filepath.Join(workspace, ".custos", "settings.local.json"), list, ruleText, workspace)
}

// AddUserRule adds a rule to the user's own settings file (UserFile) as
// AddRule adds a learned one to a workspace's: checked, idempotent, the
// rest of the file kept, replaced atomically. `policy suggest --write user`
// uses it for a rule meant for every workspace.
func AddUserRule(userConfigDir, list, ruleText string) error {
	if userConfigDir == "" {
		return errors.New("settings: AddUserRule needs the user's config directory")
	}
	if err := approval.CheckRule(list, ruleText, ""); err != nil {
		return fmt.Errorf("settings: AddUserRule: %w", err)
	}
	return addRuleTo(UserFile(userConfigDir), list, strings.TrimSpace(ruleText), "")
}

// addRuleTo is the one way a rule gets into a settings file: the file must
// parse as settings first, so nothing of it is lost.
func addRuleTo(file, list, ruleText, workspace string) error {
	return updateJSONFile(file, func(top map[string]json.RawMessage) error {
		// Never overwrite a file we cannot understand: the user's other
		// settings would be lost.
		if len(top) > 0 {
			data, _ := json.Marshal(top)
			if _, err := approval.ParseSettings(data, workspace); err != nil {
				return err
			}
		}
		perms := map[string]json.RawMessage{}
		if raw, ok := top["permissions"]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &perms); err != nil {
				return fmt.Errorf("permissions: %w", err)
			}
		}
		var rules []string
		if raw, ok := perms[list]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &rules); err != nil {
				return fmt.Errorf("permissions.%s: %w", list, err)
			}
		}
		for _, r := range rules {
			if r == ruleText {
				return errUnchanged // idempotent: already there
			}
		}
		var err error
		if perms[list], err = json.Marshal(append(rules, ruleText)); err != nil {
			return fmt.Errorf("encoding rules: %w", err)
		}
		if top["permissions"], err = json.Marshal(perms); err != nil {
			return fmt.Errorf("encoding permissions: %w", err)
		}
		return nil
	})
}

// errUnchanged tells updateJSONFile there is nothing to write.
var errUnchanged = errors.New("unchanged")

// updateJSONFile applies change to the JSON object in file (an empty object
// when the file does not exist) and replaces the file atomically: a temp file
// in the same directory, synced, then renamed over it.
func updateJSONFile(file string, change func(top map[string]json.RawMessage) error) error {
	top := map[string]json.RawMessage{}
	data, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("settings: reading %s: %w", file, err)
	default:
		if err := json.Unmarshal(data, &top); err != nil {
			return fmt.Errorf("settings: %s: %w: %w", file, approval.ErrBadSettings, err)
		}
		if top == nil {
			return fmt.Errorf("settings: %s: %w: top level must be a JSON object", file, approval.ErrBadSettings)
		}
	}
	if err := change(top); err != nil {
		if errors.Is(err, errUnchanged) {
			return nil
		}
		return fmt.Errorf("settings: %s: %w", file, err)
	}
	out, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return fmt.Errorf("settings: encoding %s: %w", file, err)
	}
	out = append(out, '\n')
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("settings: creating %s: %w", dir, err)
	}
	if err := atomicfile.Write(file, out, 0o600); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	return nil
}
