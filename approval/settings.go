package approval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/custos-dev/custos/hooks"
)

// This file is the only part of the package that does I/O; the workflow calls
// it from an activity.

// ErrBadSettings is wrapped by every error about a settings file's content.
var ErrBadSettings = errors.New("bad settings file")

// SettingsFiles returns the settings files Load reads, least specific first.
func SettingsFiles(userConfigDir, workspace string) []string {
	var files []string
	if userConfigDir != "" {
		files = append(files, filepath.Join(userConfigDir, "custos", "settings.json"))
	}
	if workspace != "" {
		files = append(files,
			filepath.Join(workspace, ".custos", "settings.json"),
			filepath.Join(workspace, ".custos", "settings.local.json"))
	}
	return files
}

// permissionsJSON is the strict shape of "permissions": known Claude Code keys
// custos does not use are accepted and ignored; any other key is an error, so
// that a typo ("denny") cannot silently drop rules.
type permissionsJSON struct {
	Allow                        []string        `json:"allow"`
	Ask                          []string        `json:"ask"`
	Deny                         []string        `json:"deny"`
	DefaultMode                  string          `json:"defaultMode"`
	AdditionalDirectories        []string        `json:"additionalDirectories"`
	DisableBypassPermissionsMode json.RawMessage `json:"disableBypassPermissionsMode"`
}

// ParseSettings parses and validates one settings file's content: JSON
// shape, permission mode and every rule. workspace is used for rule checks.
func ParseSettings(data []byte, workspace string) (Settings, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Settings{}, fmt.Errorf("%w: empty file (write {} for no settings)", ErrBadSettings)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return Settings{}, fmt.Errorf("%w: invalid JSON: %w", ErrBadSettings, err)
	}
	if top == nil {
		return Settings{}, fmt.Errorf("%w: top level must be a JSON object", ErrBadSettings)
	}
	var s Settings
	if raw, ok := top["permissions"]; ok && string(raw) != "null" {
		var p permissionsJSON
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return Settings{}, fmt.Errorf("%w: permissions: %w", ErrBadSettings, err)
		}
		if p.DefaultMode != "" {
			m, err := ParseMode(p.DefaultMode)
			if err != nil {
				return Settings{}, fmt.Errorf("%w: permissions.defaultMode: %w", ErrBadSettings, err)
			}
			s.Permissions.DefaultMode = m
		}
		// Rules are checked with a placeholder home: only their syntax
		// matters here; Compile resolves ~ with the real one.
		env := Env{Workspace: workspace, Home: "/nonexistent-home"}
		for _, l := range []struct {
			name  string
			rules []string
		}{{ListAllow, p.Allow}, {ListAsk, p.Ask}, {ListDeny, p.Deny}} {
			for i, r := range l.rules {
				if _, err := parseRule(r, env); err != nil {
					return Settings{}, fmt.Errorf("%w: permissions.%s[%d]: %w", ErrBadSettings, l.name, i, err)
				}
			}
		}
		s.Permissions.Allow, s.Permissions.Ask, s.Permissions.Deny = p.Allow, p.Ask, p.Deny
	}
	if raw, ok := top["hooks"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &s.Hooks); err != nil {
			return Settings{}, fmt.Errorf("%w: hooks: %w", ErrBadSettings, err)
		}
	}
	if raw, ok := top["sandbox"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &s.Sandbox); err != nil {
			return Settings{}, fmt.Errorf("%w: sandbox: %w", ErrBadSettings, err)
		}
	}
	return s, nil
}

// MergeSettings merges over (more specific) into base. Neither is modified.
//
// Rule lists are concatenated (duplicates dropped, first position kept),
// defaultMode comes from the most specific file that sets it, hooks are
// concatenated per point, sandbox domain and env lists concatenated and
// booleans OR-ed. A deny anywhere stays a deny, since deny beats allow.
func MergeSettings(base, over Settings) Settings {
	out := Settings{
		Permissions: Permissions{
			Allow:       mergeLists(base.Permissions.Allow, over.Permissions.Allow),
			Ask:         mergeLists(base.Permissions.Ask, over.Permissions.Ask),
			Deny:        mergeLists(base.Permissions.Deny, over.Permissions.Deny),
			DefaultMode: base.Permissions.DefaultMode,
		},
		Sandbox: SandboxSettings{
			FailIfUnavailable: base.Sandbox.FailIfUnavailable || over.Sandbox.FailIfUnavailable,
			AllowUnsandboxed:  base.Sandbox.AllowUnsandboxed || over.Sandbox.AllowUnsandboxed,
			Env:               mergeLists(base.Sandbox.Env, over.Sandbox.Env),
			Network: NetworkSettings{
				AllowedDomains:    mergeLists(base.Sandbox.Network.AllowedDomains, over.Sandbox.Network.AllowedDomains),
				DeniedDomains:     mergeLists(base.Sandbox.Network.DeniedDomains, over.Sandbox.Network.DeniedDomains),
				AllowLocalBinding: base.Sandbox.Network.AllowLocalBinding || over.Sandbox.Network.AllowLocalBinding,
			},
		},
	}
	if over.Permissions.DefaultMode != "" {
		out.Permissions.DefaultMode = over.Permissions.DefaultMode
	}
	if len(base.Hooks)+len(over.Hooks) > 0 {
		out.Hooks = hooks.Config{}
		for _, h := range []hooks.Config{base.Hooks, over.Hooks} {
			for point, groups := range h {
				// Appending per point keeps each file's groups in file
				// order; the map's iteration order does not matter.
				out.Hooks[point] = append(append([]hooks.MatcherGroup(nil), out.Hooks[point]...), groups...)
			}
		}
	}
	return out
}

// mergeLists concatenates lists, dropping repeats (first occurrence kept).
func mergeLists(a, b []string) []string {
	if len(a)+len(b) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]string, 0, len(a)+len(b))
	for _, l := range [][]string{a, b} {
		for _, x := range l {
			if !seen[x] {
				seen[x] = true
				out = append(out, x)
			}
		}
	}
	return out
}

// AddRule persists a learned rule into <workspace>/.custos/settings.local.json,
// creating it if needed, keeping everything else in the file, adding nothing
// if the rule is already there, and replacing the file atomically.
func AddRule(workspace, list, ruleText string) error {
	if list != ListAllow && list != ListAsk && list != ListDeny {
		return fmt.Errorf("approval: unknown rule list %q (want allow, ask or deny)", list)
	}
	if workspace == "" {
		return errors.New("approval: AddRule needs a workspace")
	}
	if _, err := parseRule(ruleText, Env{Workspace: workspace, Home: "/nonexistent-home"}); err != nil {
		return fmt.Errorf("approval: AddRule: %w", err)
	}
	ruleText = strings.TrimSpace(ruleText)
	file := filepath.Join(workspace, ".custos", "settings.local.json")
	return updateJSONFile(file, func(top map[string]json.RawMessage) error {
		// Never overwrite a file we cannot understand: the user's other
		// settings would be lost.
		if len(top) > 0 {
			data, _ := json.Marshal(top)
			if _, err := ParseSettings(data, workspace); err != nil {
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
		return fmt.Errorf("approval: reading %s: %w", file, err)
	default:
		if err := json.Unmarshal(data, &top); err != nil {
			return fmt.Errorf("approval: %s: %w: %w", file, ErrBadSettings, err)
		}
		if top == nil {
			return fmt.Errorf("approval: %s: %w: top level must be a JSON object", file, ErrBadSettings)
		}
	}
	if err := change(top); err != nil {
		if errors.Is(err, errUnchanged) {
			return nil
		}
		return fmt.Errorf("approval: %s: %w", file, err)
	}
	out, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return fmt.Errorf("approval: encoding %s: %w", file, err)
	}
	out = append(out, '\n')
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("approval: creating %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".*.tmp")
	if err != nil {
		return fmt.Errorf("approval: creating temp file in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name()) // a no-op after a successful rename
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return fmt.Errorf("approval: writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("approval: syncing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("approval: closing %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("approval: replacing %s: %w", file, err)
	}
	return nil
}
