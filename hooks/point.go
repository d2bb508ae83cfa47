package hooks

import (
	"fmt"
	"sort"
	"strings"
)

// Points lists every hook point in a fixed order (used for validation and error
// messages; never derive an order from a map).
var Points = []Point{
	ToolExecuteBefore, ToolExecuteAfter, ToolExecuteError, ToolExecuteDenied,
	ToolApprovalPre, ToolApprovalPost,
	LLMRequestBefore, LLMResponseAfter, LLMResponseError,
	SessionSaveBefore, SessionSaveAfter,
	PreCompact, PostCompact,
}

// claudeAliases maps Claude Code event names to custos points, so a user's existing
// settings.json hooks keep working. Claude Code events with no counterpart here
// (Stop, UserPromptSubmit, …) are rejected by ParsePoint rather than silently
// ignored: a hook the user believes is guarding something must not vanish.
var claudeAliases = map[string]Point{
	"PreToolUse":         ToolApprovalPre,
	"PostToolUse":        ToolExecuteAfter,
	"PostToolUseFailure": ToolExecuteError,
	"PermissionDenied":   ToolExecuteDenied,
	"PreCompact":         PreCompact,
	"PostCompact":        PostCompact,
}

// Valid reports whether p is one of the known points.
func (p Point) Valid() bool {
	for _, q := range Points {
		if p == q {
			return true
		}
	}
	return false
}

// HasTool reports whether payloads at p concern one tool call, i.e. whether a
// matcher means anything there. At other points matchers are ignored, as in
// Claude Code.
func (p Point) HasTool() bool {
	return strings.HasPrefix(string(p), "tool.")
}

// Decides reports whether p is a decision point: there the first hook that gives
// a non-empty result ends the run. At observer points every hook runs.
func (p Point) Decides() bool {
	return p == ToolApprovalPre || p == ToolApprovalPost
}

// ClaudeName is the Claude Code event name for p, or p itself when Claude Code
// has no equivalent. Command hooks receive it as hook_event_name.
func (p Point) ClaudeName() string {
	// Iterate in a fixed order so the answer never depends on map order.
	for _, name := range aliasNames() {
		if claudeAliases[name] == p {
			return name
		}
	}
	return string(p)
}

func aliasNames() []string {
	names := make([]string, 0, len(claudeAliases))
	//workflowcheck:ignore the names are sorted below
	for n := range claudeAliases {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ParsePoint resolves a settings key: a custos point name ("tool.approval.pre")
// or a Claude Code event alias ("PreToolUse").
func ParsePoint(name string) (Point, error) {
	if p := Point(name); p.Valid() {
		return p, nil
	}
	if p, ok := claudeAliases[name]; ok {
		return p, nil
	}
	known := make([]string, 0, len(Points)+len(claudeAliases))
	for _, p := range Points {
		known = append(known, string(p))
	}
	known = append(known, aliasNames()...)
	return "", fmt.Errorf("unknown hook point %q (known: %s)", name, strings.Join(known, ", "))
}
