// Package grants holds the pure parts of the job workflow's grants: when a
// GrantSpec ends (or why it cannot be given), its rule and scope, and how
// grants are written for people. Plain data in, plain data out; it never
// imports workflows, which keeps the grants' timers, activities and audit.
package grants

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/workflows/calltext"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// End says when a GrantSpec given at now ends, or why it cannot be given:
// one of For and Until, a positive duration within approval.MaxGrant, an
// end not in the past. The workflow refuses with the error's text.
func End(g jobapi.GrantSpec, now time.Time) (time.Time, error) {
	switch strings.TrimSpace(g.Scope) {
	case "", jobapi.ScopeJob, jobapi.ScopeWorkspace:
	default:
		return time.Time{}, fmt.Errorf("grant scope %q is not job or workspace", g.Scope)
	}
	forSet, untilSet := strings.TrimSpace(g.For) != "", !g.Until.IsZero()
	if forSet == untilSet {
		return time.Time{}, fmt.Errorf(`a grant needs exactly one of "for" (a duration such as 30m) and "until" (a time)`)
	}
	if forSet {
		d, err := time.ParseDuration(strings.TrimSpace(g.For))
		if err != nil {
			return time.Time{}, fmt.Errorf("grant for %q: not a duration such as 30m or 8h: %v", g.For, err)
		}
		if d <= 0 {
			return time.Time{}, fmt.Errorf("grant for %s: a grant lasts a positive time", g.For)
		}
		if d > approval.MaxGrant {
			return time.Time{}, fmt.Errorf("grant for %s: longer than %s; save a rule (always) instead", g.For, approval.MaxGrant)
		}
		return now.Add(d).UTC(), nil
	}
	if !g.Until.After(now) {
		return time.Time{}, fmt.Errorf("grant until %s: that is not in the future (now %s)",
			g.Until.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if g.Until.Sub(now) > approval.MaxGrant {
		return time.Time{}, fmt.Errorf("grant until %s: more than %s from now; save a rule (always) instead", g.Until.UTC().Format(time.RFC3339), approval.MaxGrant)
	}
	return g.Until.UTC(), nil
}

// Rule is the rule a GrantSpec allows: its own, else the ask's.
func Rule(g jobapi.GrantSpec, askRule string) string {
	return cmp.Or(strings.TrimSpace(g.Rule), askRule)
}

// Scope is a GrantSpec's scope, the job's when it names none.
func Scope(g jobapi.GrantSpec) string {
	return cmp.Or(strings.TrimSpace(g.Scope), jobapi.ScopeJob)
}

// Text describes a grant for people.
func Text(g jobapi.Grant) string {
	return fmt.Sprintf("%s %s in this %s until %s (by %s)", g.ID, g.Rule, g.Scope, g.Until.UTC().Format("2006-01-02 15:04:05Z"), calltext.Who(g.By, g.Channel))
}

// Of is the grant a workspace's host keeps, as the job holds it.
func Of(i approval.GrantInfo) jobapi.Grant {
	return jobapi.Grant{ID: i.ID, Rule: i.Rule, Scope: i.Scope, By: i.By, Channel: i.Channel, At: i.At, Until: i.Until}
}

// Details lists live grants in the Web UI's details, each with the revoke
// Update that ends it; nothing when there are none.
func Details(b *strings.Builder, gs []jobapi.Grant) {
	if len(gs) == 0 {
		return
	}
	fmt.Fprintf(b, "### Grants (%d)\n\n", len(gs))
	for _, g := range gs {
		payload, _ := json.Marshal(jobapi.Revoke{GrantID: g.ID, By: "web-ui", Channel: "web-ui"})
		fmt.Fprintf(b, "- %s allows %s in this %s until %s, given by %s — revoke with Update `%s`, input `%s`\n",
			calltext.CodeSpan(display.Line(g.ID, 200)), calltext.CodeSpan(display.Line(g.Rule, 500)), g.Scope, g.Until.UTC().Format("2006-01-02 15:04:05Z"),
			calltext.CodeSpan(display.Line(calltext.Who(g.By, g.Channel), 200)), jobapi.RevokeUpdate, payload)
	}
	b.WriteString("\n")
}
