package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A repository can carry .custos/settings.json. Read from a workspace nobody
// has vouched for, those files may only narrow what custos does: their deny
// and ask rules, denied domains and failIfUnavailable apply, but allow rules,
// hooks (commands run on the host), permissive modes, allowed domains, local
// binding and environment pass-through are ignored until the user trusts the
// workspace. Otherwise cloning a hostile repository and running custos in it
// would hand the repository the keys: `"allow": ["Bash"]`, `"env":
// ["OPENAI_API_KEY"]` and an allowed domain are all an injected prompt needs.

// Loaded is the outcome of reading a job's settings.
type Loaded struct {
	Settings Settings `json:"settings"`
	// Sources are the files read, least specific first.
	Sources []string `json:"sources,omitempty"`
	// Trusted is true when the user's settings trust the workspace.
	Trusted bool `json:"trusted"`
	// Ignored names what untrusted workspace files asked for and did not get.
	Ignored []string `json:"ignored,omitempty"`
}

// trustFile is the part of the user's settings.json that only it may set.
type trustFile struct {
	TrustedWorkspaces []string `json:"trustedWorkspaces"`
}

// Load reads and merges (MergeSettings) the user, project and local settings
// files, applying workspace trust. Missing files are skipped; a file that
// exists but is broken is an error naming the file (never an empty policy).
func Load(userConfigDir, workspace string) (Loaded, error) {
	var out Loaded
	trusted, err := workspaceTrusted(userConfigDir, workspace)
	if err != nil {
		return out, err
	}
	out.Trusted = trusted
	userFile := ""
	if userConfigDir != "" {
		userFile = UserSettingsFile(userConfigDir)
	}
	for _, f := range SettingsFiles(userConfigDir, workspace) {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Loaded{}, fmt.Errorf("approval: reading settings %s: %w", f, err)
		}
		s, err := ParseSettings(data, workspace)
		if err != nil {
			return Loaded{}, fmt.Errorf("approval: settings %s: %w", f, err)
		}
		if f != userFile {
			var dropped []string
			s, dropped = userOnly(s)
			for _, what := range dropped {
				out.Ignored = append(out.Ignored, fmt.Sprintf("%s: %s", f, what))
			}
		}
		if f != userFile && !trusted {
			var ignored []string
			s, ignored = Restrict(s)
			for _, what := range ignored {
				out.Ignored = append(out.Ignored, fmt.Sprintf("%s: %s", f, what))
			}
		}
		out.Settings = MergeSettings(out.Settings, s)
		out.Sources = append(out.Sources, f)
	}
	return out, nil
}

// UserSettingsFile is the user's own settings file.
func UserSettingsFile(userConfigDir string) string {
	return filepath.Join(userConfigDir, "custos", "settings.json")
}

// Restrict keeps only what narrows custos' rights and names what it dropped.
func Restrict(s Settings) (Settings, []string) {
	var ignored []string
	out := Settings{Permissions: Permissions{Ask: s.Permissions.Ask, Deny: s.Permissions.Deny}}
	if n := len(s.Permissions.Allow); n > 0 {
		ignored = append(ignored, fmt.Sprintf("permissions.allow (%d %s)", n, map[bool]string{true: "rule", false: "rules"}[n == 1]))
	}
	switch m := s.Permissions.DefaultMode; m {
	case "", ModeDefault, ModePlan, ModeDontAsk:
		out.Permissions.DefaultMode = m
	default:
		ignored = append(ignored, fmt.Sprintf("permissions.defaultMode %q", m))
	}
	if len(s.Hooks) > 0 {
		ignored = append(ignored, "hooks (commands run on the host)")
	}
	out.Sandbox.FailIfUnavailable = s.Sandbox.FailIfUnavailable
	out.Sandbox.Network.DeniedDomains = s.Sandbox.Network.DeniedDomains
	if len(s.Sandbox.Network.AllowedDomains) > 0 {
		ignored = append(ignored, "sandbox.network.allowedDomains")
	}
	if s.Sandbox.Network.AllowLocalBinding {
		ignored = append(ignored, "sandbox.network.allowLocalBinding")
	}
	if len(s.Sandbox.Env) > 0 {
		ignored = append(ignored, "sandbox.env")
	}
	return out, ignored
}

// workspaceTrusted reports whether the user's settings list the workspace, or
// a directory above it, in trustedWorkspaces.
func workspaceTrusted(userConfigDir, workspace string) (bool, error) {
	if userConfigDir == "" || workspace == "" {
		return false, nil
	}
	list, err := trustedList(UserSettingsFile(userConfigDir))
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

func trustedList(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("approval: reading settings %s: %w", file, err)
	}
	var tf trustFile
	if err := json.Unmarshal(data, &tf); err != nil {
		return nil, fmt.Errorf("approval: settings %s: %w: trustedWorkspaces: %w", file, ErrBadSettings, err)
	}
	var out []string
	for _, t := range tf.TrustedWorkspaces {
		if !filepath.IsAbs(t) {
			return nil, fmt.Errorf("approval: settings %s: %w: trustedWorkspaces: %q is not an absolute path", file, ErrBadSettings, t)
		}
		if real, err := filepath.EvalSymlinks(t); err == nil {
			t = real
		}
		out = append(out, filepath.Clean(t))
	}
	return out, nil
}

// TrustWorkspace adds workspace to the user's trustedWorkspaces (creating the
// file if needed, keeping everything else, atomically; idempotent).
func TrustWorkspace(userConfigDir, workspace string) error {
	if userConfigDir == "" {
		return errors.New("approval: no user config directory")
	}
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return fmt.Errorf("approval: workspace %q: %w", workspace, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	file := UserSettingsFile(userConfigDir)
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
