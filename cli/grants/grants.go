// Package grants is what starter says and reads of grants (an approval that
// also allows later calls its rule covers, for a while): approve's flags
// for one, a prompt's answer that asks for one, how one is shown, and the
// grants and revoke commands. cli hands them to it; it never imports cli.
package grants

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Flags are approve's flags for a grant: allow this call and, for a
// scope and a time, every later call the rule covers.
type Flags struct {
	forD, until, scope, rule *string
}

// AddFlags defines the grant's flags on fs.
func AddFlags(fs *flag.FlagSet) Flags {
	return Flags{
		forD:  fs.String("for", "", "also allow later calls the rule covers, for this long (30m, 8h; at most 168h)"),
		until: fs.String("until", "", "… or until this time: RFC 3339 (2026-12-01T18:00:00Z), HH:MM (the next one, local time) or eod (the end of today)"),
		scope: fs.String("scope", "", "the grant's scope: job (this job, the default) or workspace (every job of the workspace on its host)"),
		rule:  fs.String("rule", "", "the allow rule granted (default: the rule --always would save); it must cover this call"),
	}
}

// Spec is the GrantSpec the flags ask for, nil when none.
func (g Flags) Spec(verb string, always bool, now time.Time) (*jobapi.GrantSpec, error) {
	forD, until := strings.TrimSpace(*g.forD), strings.TrimSpace(*g.until)
	if forD == "" && until == "" {
		if *g.scope != "" || *g.rule != "" {
			return nil, cmdline.Usagef("%s: --scope and --rule go with --for or --until", verb)
		}
		return nil, nil
	}
	if verb != "approve" || always {
		return nil, cmdline.Usagef("%s: --for and --until go with approve (without --always)", verb)
	}
	if forD != "" && until != "" {
		return nil, cmdline.Usagef("approve: give --for or --until, not both")
	}
	spec := &jobapi.GrantSpec{Rule: strings.TrimSpace(*g.rule), Scope: strings.TrimSpace(*g.scope), For: forD}
	switch spec.Scope {
	case "", jobapi.ScopeJob, jobapi.ScopeWorkspace:
	default:
		return nil, cmdline.Usagef("approve: --scope %q: want job or workspace", spec.Scope)
	}
	if forD != "" {
		if d, err := time.ParseDuration(forD); err != nil || d <= 0 {
			return nil, cmdline.Usagef("approve: --for %q: want a positive duration such as 30m or 8h", forD)
		}
		return spec, nil
	}
	t, err := parseUntil(until, now)
	if err != nil {
		return nil, cmdline.Usagef("approve: --until %q: %v", until, err)
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

// Text says what a grant allows, for the terminal.
func Text(g jobapi.Grant) string {
	where := "this job"
	if g.Scope == jobapi.ScopeWorkspace {
		where = "every job of the workspace"
	}
	return fmt.Sprintf("%s allows %s in %s until %s", cmdline.ShownID(g.ID), display.Line(g.Rule, cmdline.MaxReason), where,
		g.Until.Local().Format("2006-01-02 15:04:05 MST"))
}

// Env is what the grants and revoke commands get from the command line.
type Env struct {
	Stdout, Stderr io.Writer
	// EnsureRunning refuses, in words for verb, a job that has ended.
	EnsureRunning func(ctx context.Context, c client.Client, id, verb string) error
	// SendRevoke sends the job the revoke Update and waits for the grant
	// it ended; a refusal comes back in the job's own words.
	SendRevoke func(ctx context.Context, c client.Client, id string, r jobapi.Revoke) (jobapi.Grant, error)
}

// List is `starter grants JOB`: the job's live grants.
func (a Env) List(ctx context.Context, c client.Client, id string) error {
	v, err := c.QueryWorkflow(ctx, id, "", jobapi.StatusQuery)
	if err != nil {
		return fmt.Errorf("grants of %s: %w", id, err)
	}
	var st jobapi.Status
	if err := v.Get(&st); err != nil {
		return fmt.Errorf("grants of %s: %w", id, err)
	}
	if len(st.Grants) == 0 {
		fmt.Fprintf(a.Stdout, "%s: no live grants\n", id)
		return nil
	}
	for _, g := range st.Grants {
		fmt.Fprintf(a.Stdout, "%s\n    given by %s at %s for call %s; used %d times; revoke: starter revoke %s %s\n",
			Text(g), display.Line(who(g.By, g.Channel), cmdline.MaxID), g.At.Local().Format("15:04:05"), cmdline.ShownID(g.CallID), g.Uses, id, cmdline.ShownID(g.ID))
	}
	return nil
}

// Revoke is `starter revoke JOB GRANT`: it ends a grant everywhere it
// applies.
func (a Env) Revoke(ctx context.Context, c client.Client, id string, args []string) error {
	fs := cmdline.NewFlagSet("revoke", a.Stderr)
	by := fs.String("by", app.OSUser(), "who revokes (recorded in the audit, with the channel cli)")
	pos, err := cmdline.ParseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cmdline.Usagef("revoke JOB GRANT: name exactly one grant (see: starter grants %s)", id)
	}
	if err := a.EnsureRunning(ctx, c, id, "revoke a grant of"); err != nil {
		return err
	}
	g, err := a.SendRevoke(ctx, c, id, jobapi.Revoke{GrantID: pos[0], By: *by, Channel: "cli"})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "revoked %s: it allowed %s, given by %s\n", cmdline.ShownID(g.ID), display.Line(g.Rule, cmdline.MaxReason), display.Line(who(g.By, g.Channel), cmdline.MaxID))
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

// Hint is the prompt's offer of a grant, naming the rule it grants.
func Hint(p jobapi.PendingAsk) string {
	if p.Rule == "" {
		return ""
	}
	return fmt.Sprintf(", or 'for 30m [workspace]' to also allow %s for a while", display.Line(p.Rule, cmdline.MaxReason))
}

// Typed reads a prompt answer "for 30m" or "f 2h workspace": allow,
// with a grant of the call's rule for that long in the job (or the
// workspace). bad says why such an answer cannot be a grant; a line that
// is not one gives a nil grant.
func Typed(line string) (decision string, g *jobapi.GrantSpec, bad string) {
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
	g = &jobapi.GrantSpec{For: f[1]}
	if len(f) == 3 {
		switch f[2] {
		case "job", "workspace":
			g.Scope = f[2]
		case "ws":
			g.Scope = jobapi.ScopeWorkspace
		default:
			return "", nil, fmt.Sprintf("%q is not a scope: job or workspace", f[2])
		}
	}
	return "allow", g, ""
}
