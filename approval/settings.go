package approval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/netpolicy"
	"github.com/custos-dev/custos/toolchains"
)

// ErrBadSettings is wrapped by every error about a settings file's content.
var ErrBadSettings = errors.New("bad settings file")

// permissionsJSON is the strict shape of "permissions": known Claude Code keys
// custos does not use are accepted and ignored; any other key is an error, so
// that a typo ("denny") cannot silently drop rules.
type permissionsJSON struct {
	Allow                        []string          `json:"allow"`
	Ask                          []json.RawMessage `json:"ask"`
	Deny                         []string          `json:"deny"`
	DefaultMode                  string            `json:"defaultMode"`
	AdditionalDirectories        []string          `json:"additionalDirectories"`
	DisableBypassPermissionsMode json.RawMessage   `json:"disableBypassPermissionsMode"`
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
		var err error
		if s.Permissions, s.Approval.AskTimeouts, err = parsePermissions(raw, workspace); err != nil {
			return Settings{}, err
		}
	}
	if raw, ok := top["approval"]; ok && string(raw) != "null" {
		a, err := parseApproval(raw)
		if err != nil {
			return Settings{}, err
		}
		s.Approval.Escalation = a.Escalation
	}
	if raw, ok := top["conversation"]; ok && string(raw) != "null" {
		c, err := parseConversation(raw)
		if err != nil {
			return Settings{}, err
		}
		s.Conversation = c
	}
	if err := parseRetentionAndSubagents(top, &s); err != nil {
		return Settings{}, err
	}
	if raw, ok := top["hooks"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &s.Hooks); err != nil {
			return Settings{}, fmt.Errorf("%w: hooks: %w", ErrBadSettings, err)
		}
	}
	if raw, ok := top["approvals"]; ok && string(raw) != "null" {
		qs, err := parseApprovals(raw, workspace)
		if err != nil {
			return Settings{}, fmt.Errorf("%w: %w", ErrBadSettings, err)
		}
		s.Approvals = qs
	}
	if raw, ok := top["identities"]; ok && string(raw) != "null" {
		ids, err := parseIdentities(raw)
		if err != nil {
			return Settings{}, fmt.Errorf("%w: %w", ErrBadSettings, err)
		}
		s.Identities = ids
	}
	if raw, ok := top["lsp"]; ok && string(raw) != "null" {
		l, err := parseLSP(raw)
		if err != nil {
			return Settings{}, err
		}
		s.LSP = l
	}
	if raw, ok := top["sandbox"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &s.Sandbox); err != nil {
			return Settings{}, fmt.Errorf("%w: sandbox: %w", ErrBadSettings, err)
		}
		if tc := s.Sandbox.Toolchains; tc != nil {
			for i, name := range *tc {
				if !toolchains.Known(name) {
					return Settings{}, fmt.Errorf("%w: sandbox.toolchains[%d]: unknown toolchain %q (want one of %s)", ErrBadSettings, i, name, strings.Join(toolchains.Names(), ", "))
				}
			}
		}
	}
	return s, nil
}

// parsePermissions parses and checks "permissions": the JSON shape, the
// default mode and every rule; an ask rule may carry its own deadline.
func parsePermissions(raw json.RawMessage, workspace string) (Permissions, map[string]Duration, error) {
	var p permissionsJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Permissions{}, nil, fmt.Errorf("%w: permissions: %w", ErrBadSettings, err)
	}
	var out Permissions
	if p.DefaultMode != "" {
		m, err := ParseMode(p.DefaultMode)
		if err != nil {
			return Permissions{}, nil, fmt.Errorf("%w: permissions.defaultMode: %w", ErrBadSettings, err)
		}
		out.DefaultMode = m
	}
	// Rules are checked with a placeholder home: only their syntax
	// matters here; Compile resolves ~ with the real one.
	env := Env{Workspace: workspace, Home: "/nonexistent-home"}
	ask, timeouts, err := parseAsk(p.Ask, env)
	if err != nil {
		return Permissions{}, nil, err
	}
	for _, l := range []struct {
		name  string
		rules []string
	}{{ListAllow, p.Allow}, {ListAsk, ask}, {ListDeny, p.Deny}} {
		for i, r := range l.rules {
			if _, err := parseRule(r, env); err != nil {
				return Permissions{}, nil, fmt.Errorf("%w: permissions.%s[%d]: %w", ErrBadSettings, l.name, i, err)
			}
		}
	}
	out.Allow, out.Ask, out.Deny = p.Allow, ask, p.Deny
	if out.DisableBypass, err = parseDisableBypass(p.DisableBypassPermissionsMode); err != nil {
		return Permissions{}, nil, err
	}
	return out, timeouts, nil
}

// ErrUnknownList is wrapped by the error for a rule list other than allow,
// ask or deny.
var ErrUnknownList = errors.New("unknown rule list")

// CheckRule checks a rule to be added to list ("allow", "ask" or "deny") as
// ParseSettings checks a settings file's rules. workspace is used for the
// rule check.
func CheckRule(list, ruleText, workspace string) error {
	if list != ListAllow && list != ListAsk && list != ListDeny {
		return fmt.Errorf("%w %q (want allow, ask or deny)", ErrUnknownList, list)
	}
	_, err := parseRule(ruleText, Env{Workspace: workspace, Home: "/nonexistent-home"})
	return err
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
			// Disabled anywhere is disabled: a file only narrows.
			DisableBypass: base.Permissions.DisableBypass || over.Permissions.DisableBypass,
		},
		Sandbox: SandboxSettings{
			FailIfUnavailable: base.Sandbox.FailIfUnavailable || over.Sandbox.FailIfUnavailable,
			AllowUnsandboxed:  base.Sandbox.AllowUnsandboxed || over.Sandbox.AllowUnsandboxed,
			Env:               mergeLists(base.Sandbox.Env, over.Sandbox.Env),
			Network: netpolicy.Policy{
				AllowedDomains:    mergeLists(base.Sandbox.Network.AllowedDomains, over.Sandbox.Network.AllowedDomains),
				DeniedDomains:     mergeLists(base.Sandbox.Network.DeniedDomains, over.Sandbox.Network.DeniedDomains),
				AllowLocalBinding: base.Sandbox.Network.AllowLocalBinding || over.Sandbox.Network.AllowLocalBinding,
			},
			Toolchains: narrowToolchains(base.Sandbox.Toolchains, over.Sandbox.Toolchains),
		},
		Approvals:  mergeQuorums(base.Approvals, over.Approvals),
		Identities: mergeLists(base.Identities, over.Identities),
	}
	if over.Permissions.DefaultMode != "" {
		out.Permissions.DefaultMode = over.Permissions.DefaultMode
	}
	out.Approval = mergeApproval(base.Approval, over.Approval)
	out.LSP = mergeLSP(base.LSP, over.LSP)
	out.Conversation = mergeConversation(base.Conversation, over.Conversation)
	out.Retention = mergeRetention(base.Retention, over.Retention)
	out.Subagents = mergeSubagents(base.Subagents, over.Subagents)
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

// parseLSP reads "lsp": each language a list of words, the server's
// command and its arguments (an empty list: no server).
func parseLSP(raw json.RawMessage) (map[string][]string, error) {
	var l map[string][]string
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("%w: lsp: want an object of languages, each a command as a list of words: %w", ErrBadSettings, err)
	}
	for lang, argv := range l {
		if strings.TrimSpace(lang) == "" {
			return nil, fmt.Errorf("%w: lsp: empty language name", ErrBadSettings)
		}
		if len(argv) > 0 && strings.TrimSpace(argv[0]) == "" {
			return nil, fmt.Errorf("%w: lsp.%s: empty command", ErrBadSettings, lang)
		}
	}
	return l, nil
}

// mergeLSP merges "lsp": the more specific file's command for a language
// replaces the other's.
func mergeLSP(base, over map[string][]string) map[string][]string {
	if len(base)+len(over) == 0 {
		return nil
	}
	out := make(map[string][]string, len(base)+len(over))
	for _, m := range []map[string][]string{base, over} {
		for lang, argv := range m {
			out[lang] = argv
		}
	}
	return out
}

// narrowToolchains merges sandbox.toolchains: a more specific file can
// only narrow what the less specific one gives (their intersection); nil
// (not set) narrows nothing.
func narrowToolchains(base, over *[]string) *[]string {
	switch {
	case base == nil:
		return over
	case over == nil:
		return base
	}
	out := []string{}
	for _, t := range *base {
		if contains(*over, t) {
			out = append(out, t)
		}
	}
	return &out
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
