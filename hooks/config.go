package hooks

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// DefaultTimeout bounds a command hook that sets no timeout of its own.
const DefaultTimeout = 30 * time.Second

// CommandHook is one configured command hook, resolved for a point.
type CommandHook struct {
	// Name identifies the hook in results and the audit: the settings location
	// and the command, e.g. `PreToolUse[0].hooks[1] ./guard.sh`.
	Name     string        `json:"name"`
	Command  string        `json:"command"`
	Timeout  time.Duration `json:"timeout"`
	Priority int           `json:"priority,omitempty"`
	Point    Point         `json:"point"`
	Matcher  string        `json:"matcher,omitempty"`
}

// Validate checks every entry and reports all problems at once, each with its
// settings location, so a user can fix a broken file in one pass.
func (c Config) Validate() error {
	var errs []error
	for _, key := range c.keys() {
		if _, err := ParsePoint(key); err != nil {
			errs = append(errs, fmt.Errorf("hooks.%s: %w", key, err))
		}
		for gi, g := range c[key] {
			where := fmt.Sprintf("hooks.%s[%d]", key, gi)
			if _, err := compileMatcher(g.Matcher); err != nil {
				errs = append(errs, fmt.Errorf("%s.matcher: %w", where, err))
			}
			if len(g.Hooks) == 0 {
				errs = append(errs, fmt.Errorf("%s: no hooks in matcher group", where))
			}
			for hi, h := range g.Hooks {
				if err := h.validate(); err != nil {
					errs = append(errs, fmt.Errorf("%s.hooks[%d]: %w", where, hi, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (h HookSpec) validate() error {
	var errs []error
	if h.Type != "command" {
		errs = append(errs, fmt.Errorf("type must be \"command\", got %q", h.Type))
	}
	if strings.TrimSpace(h.Command) == "" {
		errs = append(errs, errors.New("empty command"))
	}
	if h.Timeout < 0 {
		errs = append(errs, fmt.Errorf("negative timeout %d", h.Timeout))
	}
	if h.Priority < 0 {
		// Negative priorities belong to system handlers; see Registry.Register.
		errs = append(errs, fmt.Errorf("priority must be >= 0 (negative is reserved for system hooks), got %d", h.Priority))
	}
	return errors.Join(errs...)
}

// CommandHooks returns the command hooks for point p whose matcher accepts tool,
// sorted by priority and then by config order: keys in lexical order (custos
// names and Claude Code aliases may both be present), then group and hook
// order. Invalid entries are skipped; call Validate when loading settings.
func (c Config) CommandHooks(p Point, tool string) []CommandHook {
	var out []CommandHook
	for _, key := range c.keys() {
		kp, err := ParsePoint(key)
		if err != nil || kp != p {
			continue
		}
		for gi, g := range c[key] {
			m, err := compileMatcher(g.Matcher)
			if err != nil || (p.HasTool() && !m.match(tool)) {
				continue
			}
			for hi, h := range g.Hooks {
				if h.validate() != nil {
					continue
				}
				timeout := DefaultTimeout
				if h.Timeout > 0 {
					timeout = time.Duration(h.Timeout) * time.Second
				}
				out = append(out, CommandHook{
					Name:     fmt.Sprintf("%s[%d].hooks[%d] %s", key, gi, hi, Shorten(h.Command, 80)),
					Command:  h.Command,
					Timeout:  timeout,
					Priority: h.Priority,
					Point:    p,
					Matcher:  g.Matcher,
				})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Priority < out[j].Priority })
	return out
}

// Merge combines configs in order (for example user, then project, then local
// settings): groups of later configs run after those of earlier ones at equal
// priority. Keys that name a known point are normalised to the custos name, so
// "PreToolUse" in one file and "tool.approval.pre" in another keep file order.
// Unknown keys are kept as they are, for Validate to report. The inputs are not
// modified.
func Merge(cs ...Config) Config {
	out := Config{}
	for _, c := range cs {
		for _, key := range c.keys() {
			k := key
			if p, err := ParsePoint(key); err == nil {
				k = string(p)
			}
			for _, g := range c[key] {
				g.Hooks = append([]HookSpec(nil), g.Hooks...)
				out[k] = append(out[k], g)
			}
		}
	}
	return out
}

// keys returns c's keys in lexical order: map order must never leak into a
// result that workflow code depends on.
func (c Config) keys() []string {
	keys := make([]string, 0, len(c))
	//workflowcheck:ignore the keys are sorted below
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Shorten makes s one line of at most n runes, for messages about a hook.
func Shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
