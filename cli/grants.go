package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/workflows"
)

// grantFlags are approve's flags for a grant: allow this call and, for a
// scope and a time, every later call the rule covers.
type grantFlags struct {
	forD, until, scope, rule *string
}

func addGrantFlags(fs *flag.FlagSet) grantFlags {
	return grantFlags{
		forD:  fs.String("for", "", "also allow later calls the rule covers, for this long (30m, 8h; at most 168h)"),
		until: fs.String("until", "", "… or until this time: RFC 3339 (2026-12-01T18:00:00Z), HH:MM (the next one, local time) or eod (the end of today)"),
		scope: fs.String("scope", "", "the grant's scope: job (this job, the default) or workspace (every job of the workspace on its host)"),
		rule:  fs.String("rule", "", "the allow rule granted (default: the rule --always would save); it must cover this call"),
	}
}

// spec is the GrantSpec the flags ask for, nil when none.
func (g grantFlags) spec(verb string, always bool, now time.Time) (*workflows.GrantSpec, error) {
	forD, until := strings.TrimSpace(*g.forD), strings.TrimSpace(*g.until)
	if forD == "" && until == "" {
		if *g.scope != "" || *g.rule != "" {
			return nil, usagef("%s: --scope and --rule go with --for or --until", verb)
		}
		return nil, nil
	}
	if verb != "approve" || always {
		return nil, usagef("%s: --for and --until go with approve (without --always)", verb)
	}
	if forD != "" && until != "" {
		return nil, usagef("approve: give --for or --until, not both")
	}
	spec := &workflows.GrantSpec{Rule: strings.TrimSpace(*g.rule), Scope: strings.TrimSpace(*g.scope), For: forD}
	switch spec.Scope {
	case "", workflows.ScopeJob, workflows.ScopeWorkspace:
	default:
		return nil, usagef("approve: --scope %q: want job or workspace", spec.Scope)
	}
	if forD != "" {
		if d, err := time.ParseDuration(forD); err != nil || d <= 0 {
			return nil, usagef("approve: --for %q: want a positive duration such as 30m or 8h", forD)
		}
		return spec, nil
	}
	t, err := parseUntil(until, now)
	if err != nil {
		return nil, usagef("approve: --until %q: %v", until, err)
	}
	spec.Until = t
	return spec, nil
}

// parseUntil reads an end time: RFC 3339, HH:MM (the next such time,
// local), or eod (local midnight ending today).
func parseUntil(s string, now time.Time) (time.Time, error) {
	if s == "eod" {
		y, m, d := now.Date()
		return time.Date(y, m, d+1, 0, 0, 0, 0, now.Location()), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	hm, err := time.ParseInLocation("15:04", s, now.Location())
	if err != nil {
		return time.Time{}, errors.New("want RFC 3339 (2026-12-01T18:00:00Z), HH:MM or eod")
	}
	y, m, d := now.Date()
	t := time.Date(y, m, d, hm.Hour(), hm.Minute(), 0, 0, now.Location())
	if !t.After(now) {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

// grantText says what a grant allows, for the terminal.
func grantText(g workflows.Grant) string {
	where := "this job"
	if g.Scope == workflows.ScopeWorkspace {
		where = "every job of the workspace"
	}
	return fmt.Sprintf("%s allows %s in %s until %s", shownID(g.ID), display.Line(g.Rule, maxReason), where,
		g.Until.Local().Format("2006-01-02 15:04:05 MST"))
}

// grantCommand runs "grants JOB" or "revoke JOB GRANT".
func (a *App) grantCommand(ctx context.Context, verb string, args []string) error {
	return a.withJob(ctx, args, verb, func(c client.Client, id string, rest []string) error {
		if verb == "revoke" {
			return a.revoke(ctx, c, id, rest)
		}
		return a.grants(ctx, c, id)
	})
}

// grants lists a job's live grants.
func (a *App) grants(ctx context.Context, c client.Client, id string) error {
	v, err := c.QueryWorkflow(ctx, id, "", workflows.StatusQuery)
	if err != nil {
		return fmt.Errorf("grants of %s: %w", id, err)
	}
	var st workflows.Status
	if err := v.Get(&st); err != nil {
		return fmt.Errorf("grants of %s: %w", id, err)
	}
	if len(st.Grants) == 0 {
		fmt.Fprintf(a.Stdout, "%s: no live grants\n", id)
		return nil
	}
	for _, g := range st.Grants {
		fmt.Fprintf(a.Stdout, "%s\n    given by %s at %s for call %s; used %d times; revoke: starter revoke %s %s\n",
			grantText(g), display.Line(who(g.By, g.Channel), maxID), g.At.Local().Format("15:04:05"), shownID(g.CallID), g.Uses, id, shownID(g.ID))
	}
	return nil
}

// revoke ends a grant everywhere it applies.
func (a *App) revoke(ctx context.Context, c client.Client, id string, args []string) error {
	fs := newFlagSet("revoke", a.Stderr)
	by := fs.String("by", app.OSUser(), "who revokes (recorded in the audit, with the channel cli)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("revoke JOB GRANT: name exactly one grant (see: starter grants %s)", id)
	}
	if err := ensureRunning(ctx, c, id, "revoke a grant of"); err != nil {
		return err
	}
	g, err := update[workflows.Grant](ctx, c, id, workflows.RevokeUpdate, workflows.Revoke{GrantID: pos[0], By: *by, Channel: "cli"})
	if err != nil {
		if !errors.Is(err, errNotApplied) {
			err = fmt.Errorf("revoke %s in %s: %w", pos[0], id, err)
		}
		return err
	}
	fmt.Fprintf(a.Stdout, "revoked %s: it allowed %s, given by %s\n", shownID(g.ID), display.Line(g.Rule, maxReason), display.Line(who(g.By, g.Channel), maxID))
	return nil
}

func who(by, channel string) string {
	if by == "" {
		by = "someone"
	}
	if channel == "" {
		return by
	}
	return by + " via " + channel
}

// grantHint is the prompt's offer of a grant, naming the rule it grants.
func grantHint(p workflows.PendingAsk) string {
	if p.Rule == "" {
		return ""
	}
	return fmt.Sprintf(", or 'for 30m [workspace]' to also allow %s for a while", display.Line(p.Rule, maxReason))
}

// typedGrant reads a prompt answer "for 30m" or "f 2h workspace": allow,
// with a grant of the call's rule for that long in the job (or the
// workspace). bad says why such an answer cannot be a grant; a line that
// is not one gives a nil grant.
func typedGrant(line string) (decision string, g *workflows.GrantSpec, bad string) {
	f := strings.Fields(strings.ToLower(line))
	if len(f) == 0 || (f[0] != "f" && f[0] != "for") {
		return "", nil, ""
	}
	if len(f) < 2 || len(f) > 3 {
		return "", nil, "a grant is 'for DURATION' or 'for DURATION workspace', e.g. for 30m"
	}
	if d, err := time.ParseDuration(f[1]); err != nil || d <= 0 {
		return "", nil, fmt.Sprintf("%q is not a positive duration such as 30m or 8h", f[1])
	}
	g = &workflows.GrantSpec{For: f[1]}
	if len(f) == 3 {
		switch f[2] {
		case "job", "workspace":
			g.Scope = f[2]
		case "ws":
			g.Scope = workflows.ScopeWorkspace
		default:
			return "", nil, fmt.Sprintf("%q is not a scope: job or workspace", f[2])
		}
	}
	return "allow", g, ""
}
