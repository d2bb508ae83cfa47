package ghhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/custos-dev/custos/mcpservers"
	"github.com/custos-dev/custos/sandbox/pathguard"
	"github.com/custos-dev/custos/settingsfile"
)

// Defaults of triggers.github.
const (
	DefaultMention = "@custos"
	DefaultAPIURL  = "https://api.github.com"
	// DefaultMaxRunning is how many GitHub-started jobs may be open at
	// once before a comment that would start another is refused.
	DefaultMaxRunning = 8
	// MaxMaxRunning bounds maxRunning: the open jobs are counted from one
	// visibility page of this size.
	MaxMaxRunning = 1000
)

// DefaultAssociations are the comment authors' associations with the
// repository whose comments start or continue a job.
var DefaultAssociations = []string{"OWNER", "MEMBER", "COLLABORATOR"}

// associations are GitHub's values of author_association.
var associations = []string{"COLLABORATOR", "CONTRIBUTOR", "FIRST_TIMER", "FIRST_TIME_CONTRIBUTOR",
	"MANNEQUIN", "MEMBER", "NONE", "OWNER"}

// Config is triggers.github of the user's settings, its ${VAR}s expanded.
type Config struct {
	// Secret is the webhook's secret; "" refuses every delivery.
	Secret string
	// Mention is what a comment says to call custos ("@custos").
	Mention string
	// Repositories are the workspaces by repository, keys in lower case
	// ("owner/name").
	Repositories map[string]string
	// Token, when set, lets custos post a job's answers on the issue.
	Token string
	// APIURL is GitHub's REST API (DefaultAPIURL).
	APIURL string
	// Allowed are the author_associations whose comments are read
	// (DefaultAssociations), by repository (lower case owner/name); a
	// repository without an entry takes AllowedAssociations.
	AllowedAssociations []string
	Allowed             map[string][]string
	// MaxRunning is how many GitHub-started jobs may be open at once
	// (DefaultMaxRunning; 0 is the default too).
	MaxRunning int
	// File is the settings file it was read from.
	File string
}

// githubJSON is the strict shape of triggers.github.
type githubJSON struct {
	Secret              string                     `json:"secret"`
	Mention             string                     `json:"mention"`
	Repositories        map[string]json.RawMessage `json:"repositories"`
	Token               string                     `json:"token"`
	APIURL              string                     `json:"apiURL"`
	AllowedAssociations *[]string                  `json:"allowedAssociations"`
	MaxRunning          *int                       `json:"maxRunning"`
}

// repoJSON is a repository's richer entry: its workspace and, optionally,
// its own allowedAssociations.
type repoJSON struct {
	Workspace           string    `json:"workspace"`
	AllowedAssociations *[]string `json:"allowedAssociations"`
}

// AllowedFor is the author_associations read on repo (any case).
func (c Config) AllowedFor(repo string) []string {
	if a, ok := c.Allowed[strings.ToLower(repo)]; ok {
		return a
	}
	if c.AllowedAssociations != nil {
		return c.AllowedAssociations
	}
	return DefaultAssociations
}

// Max is MaxRunning or its default.
func (c Config) Max() int {
	if c.MaxRunning <= 0 {
		return DefaultMaxRunning
	}
	return c.MaxRunning
}

// ErrBadTriggers is wrapped by every error about triggers' content.
var ErrBadTriggers = errors.New("bad triggers settings")

var (
	// repoName is owner/name as GitHub allows them.
	repoName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$`)
	// mentionName is @ and a GitHub login or team (org/team).
	mentionName = regexp.MustCompile(`^@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:/[A-Za-z0-9._-]+)?$`)
)

// Load reads triggers.github from the user's own settings file under
// userConfigDir (a workspace's settings never set triggers). on is false
// when the file or the entry is missing. A broken entry is an error that
// names the file and the entry.
func Load(userConfigDir string) (Config, bool, error) {
	file := settingsfile.UserFile(userConfigDir)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, false, nil
	}
	if err != nil {
		return Config{}, false, fmt.Errorf("settings %s: %w", file, err)
	}
	cfg, on, err := Parse(data)
	if err != nil {
		return Config{}, false, fmt.Errorf("settings %s: %w", file, err)
	}
	cfg.File = file
	return cfg, on, nil
}

// Parse reads triggers.github from a settings file's content, strictly:
// an unknown key, a repository that is not owner/name, a workspace that is
// not an absolute directory, a ${VAR} that is not set are errors.
func Parse(data []byte) (Config, bool, error) {
	var top struct {
		Triggers json.RawMessage `json:"triggers"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return Config{}, false, fmt.Errorf("%w: invalid JSON: %w", ErrBadTriggers, err)
	}
	if len(top.Triggers) == 0 || string(top.Triggers) == "null" {
		return Config{}, false, nil
	}
	var triggers struct {
		GitHub json.RawMessage `json:"github"`
	}
	if err := strictDecode(top.Triggers, &triggers); err != nil {
		return Config{}, false, fmt.Errorf("%w: triggers: %w", ErrBadTriggers, err)
	}
	if len(triggers.GitHub) == 0 || string(triggers.GitHub) == "null" {
		return Config{}, false, nil
	}
	var g githubJSON
	if err := strictDecode(triggers.GitHub, &g); err != nil {
		return Config{}, false, fmt.Errorf("%w: triggers.github: %w", ErrBadTriggers, err)
	}
	cfg, err := g.config()
	if err != nil {
		return Config{}, false, fmt.Errorf("%w: triggers.github.%w", ErrBadTriggers, err)
	}
	return cfg, true, nil
}

func strictDecode(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// config checks g and expands its secrets; an error names the entry (after
// "triggers.github.").
func (g githubJSON) config() (Config, error) {
	var cfg Config
	var err error
	if cfg.Secret, err = mcpservers.Expand(g.Secret); err != nil {
		return cfg, fmt.Errorf("secret: %w", err)
	}
	if cfg.Token, err = mcpservers.Expand(g.Token); err != nil {
		return cfg, fmt.Errorf("token: %w", err)
	}
	cfg.Mention = DefaultMention
	if g.Mention != "" {
		if !mentionName.MatchString(g.Mention) {
			return cfg, fmt.Errorf("mention: %q is not @ and a GitHub login (e.g. %q)", g.Mention, DefaultMention)
		}
		cfg.Mention = g.Mention
	}
	cfg.APIURL = DefaultAPIURL
	if g.APIURL != "" {
		u, err := url.Parse(g.APIURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
			return cfg, fmt.Errorf("apiURL: %q is not an http(s) URL of GitHub's REST API", g.APIURL)
		}
		cfg.APIURL = strings.TrimRight(g.APIURL, "/")
	}
	cfg.MaxRunning = DefaultMaxRunning
	if g.MaxRunning != nil {
		if *g.MaxRunning < 1 || *g.MaxRunning > MaxMaxRunning {
			return cfg, fmt.Errorf("maxRunning: %d is not between 1 and %d", *g.MaxRunning, MaxMaxRunning)
		}
		cfg.MaxRunning = *g.MaxRunning
	}
	cfg.AllowedAssociations = DefaultAssociations
	if g.AllowedAssociations != nil {
		if cfg.AllowedAssociations, err = allowedAssociations(*g.AllowedAssociations); err != nil {
			return cfg, fmt.Errorf("allowedAssociations: %w", err)
		}
	}
	if cfg.Repositories, cfg.Allowed, err = repositories(g.Repositories); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// allowedAssociations checks a list of GitHub's author_association values
// (upper case, as GitHub sends them): an unknown one, or none, is an error.
func allowedAssociations(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("empty: no comment would be read (leave it out for %s)", strings.Join(DefaultAssociations, ", "))
	}
	out := []string{}
	for _, a := range in {
		if !slices.Contains(associations, a) {
			return nil, fmt.Errorf("%q is not one of GitHub's author_association values (%s)", a, strings.Join(associations, ", "))
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// repoEntry reads a repository's entry: a workspace ("/abs") or
// {"workspace": "/abs", "allowedAssociations": [...]} (allowed nil when it
// has none of its own).
func repoEntry(raw json.RawMessage) (ws string, allowed []string, err error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil, nil
	}
	var r repoJSON
	if err := strictDecode(raw, &r); err != nil {
		return "", nil, fmt.Errorf("not a workspace path nor {\"workspace\", \"allowedAssociations\"}: %w", err)
	}
	if r.Workspace == "" {
		return "", nil, fmt.Errorf("no workspace")
	}
	if r.AllowedAssociations != nil {
		if allowed, err = allowedAssociations(*r.AllowedAssociations); err != nil {
			return "", nil, fmt.Errorf("allowedAssociations: %w", err)
		}
	}
	return r.Workspace, allowed, nil
}

// repositories checks each owner/name and its workspace, and that no two
// repositories' jobs would share names.
func repositories(in map[string]json.RawMessage) (map[string]string, map[string][]string, error) {
	out, allowed := map[string]string{}, map[string][]string{}
	prefixes := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(in)) {
		entry := fmt.Sprintf("repositories[%q]", name)
		if !repoName.MatchString(name) {
			return nil, nil, fmt.Errorf("%s: not a repository's owner/name", entry)
		}
		key := strings.ToLower(name)
		if _, dup := out[key]; dup {
			return nil, nil, fmt.Errorf("%s: named twice (GitHub's names ignore case)", entry)
		}
		raw, own, err := repoEntry(in[name])
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", entry, err)
		}
		ws, err := mcpservers.Expand(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", entry, err)
		}
		if !strings.HasPrefix(ws, "/") {
			return nil, nil, fmt.Errorf("%s: the workspace %q is not an absolute path", entry, ws)
		}
		if ws, err = pathguard.CanonicalWorkspace(ws); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", entry, err)
		}
		p := jobPrefix(key)
		if other, ok := prefixes[p]; ok {
			return nil, nil, fmt.Errorf("%s: its jobs would be named as %s's (%s…); rename one", entry, other, p)
		}
		prefixes[p] = name
		out[key] = ws
		if own != nil {
			allowed[key] = own
		}
	}
	return out, allowed, nil
}
