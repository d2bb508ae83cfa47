// Package calltext holds the job workflow's pure text helpers: how a call,
// a decision and a long text are shortened and written for people. Plain
// strings in, plain strings out; it never imports workflows.
package calltext

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
)

// Decision is a call's decision for people: what, by which layer and whom,
// the rule and the reason.
func Decision(rec approval.AuditRecord) string {
	s := fmt.Sprintf("%s by %s", rec.Decision, rec.Layer)
	if rec.Approver != "" {
		s += " " + rec.Approver
	}
	if rec.Rule != "" {
		s += " (" + rec.Rule + ")"
	}
	if rec.Reason != "" {
		s += ": " + rec.Reason
	}
	if rec.Modified {
		s += " [input rewritten by hook]"
	}
	return s
}

// Remove is list without s, in list's backing array.
func Remove(list []string, s string) []string {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// InCallOrder orders pending call IDs as the model gave the calls: the
// calls of one answer may reach a person in another order (they waited
// together for the workspace's grants), and people see them in the
// model's.
func InCallOrder(order, calls []string) []string {
	pos := func(id string) int {
		if i := slices.Index(calls, id); i >= 0 {
			return i
		}
		return len(calls) // not of this answer: last, in the order asked
	}
	slices.SortStableFunc(order, func(a, b string) int { return pos(a) - pos(b) })
	return order
}

// FirstLine is s's first line, at most max bytes (an ellipsis marks a cut).
func FirstLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// FirstLines is at most n lines of s.
func FirstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		return strings.Join(lines[:n], "\n") + "\n…"
	}
	return s
}

// CutRunes is s cut to at most n characters (an ellipsis marks a cut).
func CutRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// UISummary is a call's one-line summary for the Web UI, which renders
// summaries as markdown: the argument goes in a code span so globs and shell
// commands (`**/*`, `a_b`) are shown as written.
func UISummary(tool string, input json.RawMessage) string {
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(api.Summarize(tool, input), tool), ":"))
	if rest == "" {
		return tool
	}
	return fmt.Sprintf("%s `%s`", tool, strings.ReplaceAll(rest, "`", "'"))
}

// CodeSpan is s as a markdown code span (a backquote in it becomes ').
func CodeSpan(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}

// Who names who did something, and through which channel if one is known.
func Who(by, channel string) string {
	by = cmp.Or(by, "someone")
	if channel == "" {
		return by
	}
	return by + " via " + channel
}

// Denial is the tool result the model gets for a refused call: who
// refused it and why, what would be required to allow it, and its risk
// class, so the model can adapt or explain instead of retrying.
func Denial(rec approval.AuditRecord, mode approval.Mode, env approval.Env, timedOut bool) string {
	b, _ := json.Marshal(struct {
		Approved bool              `json:"approved"`
		Decision approval.Decision `json:"decision"`
		Layer    approval.Layer    `json:"layer"`
		Rule     string            `json:"rule,omitempty"`
		Reason   string            `json:"reason"`
		Required string            `json:"required"`
		Risk     approval.Risk     `json:"risk"`
	}{false, rec.Decision, rec.Layer, rec.Rule, rec.Reason, required(rec, mode, env, timedOut),
		approval.ClassifyRisk(approval.Call{Tool: rec.Tool, Input: rec.Input}, env)})
	return string(b)
}

// required says what would allow a refused call (timedOut: its deadline
// denied it).
func required(rec approval.AuditRecord, mode approval.Mode, env approval.Env, timedOut bool) string {
	call := approval.Call{Tool: rec.Tool, Input: rec.Input}
	switch rec.Layer {
	case approval.LayerRules:
		switch {
		case !api.KnownTool(rec.Tool):
			return "nothing: there is no such tool"
		case rec.System:
			return "nothing: a system rule denies this call and nothing overrides it"
		case rec.Rule != "":
			return fmt.Sprintf("the user removing the deny rule %s from their settings", rec.Rule)
		}
		return "valid arguments: a JSON object with the tool's parameters"
	case approval.LayerMode:
		if mode == approval.ModePlan {
			return "leaving plan mode (a person can switch the job to default or acceptEdits); plan mode only reads"
		}
		return fmt.Sprintf("an allow rule such as %s, or a mode that asks a person (the job is in %s mode)",
			approval.SuggestRule(call, env), mode)
	case approval.LayerHook:
		return fmt.Sprintf("the hook %s allowing it", cmp.Or(rec.Hook, "that refused it"))
	case approval.LayerHuman:
		if timedOut {
			return fmt.Sprintf("a person answering in time (nobody did; you may ask again, or ask the user to answer sooner), or an allow rule such as %s", approval.SuggestRule(call, env))
		}
		return fmt.Sprintf("a person's approval (decide Update allow), or an allow rule such as %s", approval.SuggestRule(call, env))
	}
	return "a person's approval"
}
