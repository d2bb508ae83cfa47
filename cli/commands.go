package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/policyreplay"
	"github.com/custos-dev/custos/workflows/jobapi"
)

func (a *App) status(ctx context.Context, c client.Client, id string) error {
	st, err := queryStatus(ctx, c, id)
	if forgotten(err) {
		return a.statusFromFiles(id, err)
	}
	if err != nil {
		return fmt.Errorf("status of %s: %w", id, err)
	}
	fmt.Fprintf(a.Stdout, "job:       %s\ntask:      %s\nworkspace: %s\nstate:     %s\nturn:      %d\nmode:      %s\nusage:     %d model calls, %d tokens%s\n",
		display.Line(st.JobID, maxID), statusTask(st), display.Line(st.Workspace, 0), st.State, st.Turn, st.Mode, st.Usage.ModelCalls, st.Usage.TotalTokens,
		budgetLine(st.Budget))
	if b := st.Budget; b.Reached != "" {
		fmt.Fprintf(a.Stdout, "budget:    reached (the %s's); raise it: starter budget %s --tokens N (or --per-message N), or end it: starter end %s\n", b.Reached, id, id)
	}
	if st.Host != "" {
		fmt.Fprintf(a.Stdout, "host:      %s\n", display.Line(st.Host, maxID))
	}
	files := st.Files.Or(st.Workspace, id)
	fmt.Fprintf(a.Stdout, "files:     %s\n           %s\n", display.Line(files.Transcript, 0), display.Line(files.Audit, 0))
	if len(st.Instructions) > 0 {
		var parts []string
		for _, f := range st.Instructions {
			parts = append(parts, display.Line(f.Path, 0)+" ("+f.Size()+")")
		}
		fmt.Fprintf(a.Stdout, "instructions: %s\n", strings.Join(parts, ", "))
	}
	if w := st.ModelWait; w != nil {
		fmt.Fprintf(a.Stdout, "waiting:   for the model endpoint since %s, %d failed attempts; next %s\n           %s\n           last error: %s\n           try now: starter retry %s\n",
			w.Since.Local().Format("15:04:05"), w.Attempts, w.NextAt.Local().Format("15:04:05"), display.Line(w.Fix, 0), display.Line(w.Error, maxReason), id)
	}
	if waitsForMessage(st) {
		fmt.Fprintf(a.Stdout, "waiting:   for %s since %s (ends by itself at %s): starter say %s \"…\" | starter end %s\n",
			waitingFor(st), st.WaitingSince.Local().Format("2006-01-02 15:04"), st.IdleUntil.Local().Format("2006-01-02 15:04"), id, id)
	} else if st.Queued > 0 {
		fmt.Fprintf(a.Stdout, "messages:  %d queued for the model's next call\n", st.Queued)
	}
	if len(st.Pending) == 0 {
		fmt.Fprintln(a.Stdout, "pending:   none")
	}
	for _, p := range st.Pending {
		fmt.Fprintf(a.Stdout, "pending:   %s: %s (denied in %s)\n           starter approve %s %s   |   starter deny %s %s\n",
			shownID(p.CallID), display.SafeLine(p.Summary), time.Until(p.Deadline).Round(time.Second), id, shownID(p.CallID), id, shownID(p.CallID))
		if p.Reason != "" {
			fmt.Fprintf(a.Stdout, "           why: %s\n", display.Line(p.Reason, maxReason))
		}
		if len(p.Quorum) > 0 {
			so := "nobody"
			if v := jobapi.QuorumVoters(p.Quorum); len(v) > 0 {
				so = strings.Join(v, ", ")
			}
			fmt.Fprintf(a.Stdout, "           approvals: still %s; approved so far: %s (only answers a channel verified count: Slack, a deployed inbox)\n",
				display.Line(jobapi.QuorumNeeded(p.Quorum), maxReason), display.Line(so, maxReason))
		}
	}
	for _, g := range st.Grants {
		fmt.Fprintf(a.Stdout, "grant:     %s\n", grantText(g))
	}
	a.statusFamily(ctx, c, st)
	if st.LastAnswer != "" {
		fmt.Fprintf(a.Stdout, "answer:    %s\n", display.Safe(st.LastAnswer))
	}
	return nil
}

func (a *App) decide(ctx context.Context, c client.Client, id, verb string, args []string) error {
	fs := newFlagSet(verb, a.Stderr)
	always := fs.Bool("always", false, "allow, and add an allow rule for calls like this one")
	never := fs.Bool("never", false, "deny, and add a deny rule for calls like this one")
	reason := fs.String("reason", "", "why (shown to the model on a denial)")
	by := fs.String("by", app.OSUser(), "who decides (recorded in the audit, with the channel cli)")
	gf := addGrantFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	grant, err := gf.spec(verb, *always, time.Now())
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("%s JOB CALL: name exactly one call ID (see: starter status %s)", verb, id)
	}
	decision := verb
	if verb == "approve" {
		decision = "allow"
		if *always {
			decision = "always"
		}
	} else if *never {
		decision = "never"
	}
	if err := ensureRunning(ctx, c, id, verb); err != nil {
		return err
	}
	res, err := sendDecision(ctx, c, id, jobapi.ApprovalDecision{CallID: pos[0], Decision: decision, Reason: *reason,
		By: *by, Channel: "cli", Grant: grant})
	if err != nil {
		return err
	}
	fmt.Fprintln(a.Stdout, outcomeText(res))
	if res.Grant != nil {
		fmt.Fprintf(a.Stdout, "granted: %s\n         revoke: starter revoke %s %s\n", grantText(*res.Grant), id, shownID(res.Grant.ID))
	}
	return nil
}

func (a *App) setMode(ctx context.Context, c client.Client, id string, args []string) error {
	if len(args) != 1 {
		return usagef("mode JOB MODE")
	}
	m, err := approval.ParseMode(args[0])
	if err != nil {
		return usagef("mode: %v", err)
	}
	if err := ensureRunning(ctx, c, id, "change the mode of"); err != nil {
		return err
	}
	res, err := sendMode(ctx, c, id, jobapi.ModeChange{Mode: string(m), By: app.OSUser(), Channel: "cli"})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "%s: mode %s -> %s\n", id, res.Old, res.New)
	return nil
}

// ensureRunning says clearly when a job can no longer take signals, instead
// of the server's "workflow execution already completed".
func ensureRunning(ctx context.Context, c client.Client, id, verb string) error {
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, id, err)
	}
	if s := d.GetWorkflowExecutionInfo().GetStatus(); s != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return fmt.Errorf("cannot %s %s: the job has ended (%s); see: starter audit %s",
			verb, id, strings.ToLower(s.String()), id)
	}
	return nil
}

// audit prints the job's audit trail: from the workspace file when it is
// there (the whole trail), else from the audit query (what the job holds).
func (a *App) audit(ctx context.Context, c client.Client, id string, args []string) error {
	fs := newFlagSet("audit", a.Stderr)
	asJSON := fs.Bool("json", false, "print JSONL records")
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	var recs []approval.AuditRecord
	if st, err := queryStatus(ctx, c, id); err == nil && st.Workspace != "" {
		if r, err := activities.ReadAudit(st.Files.Or(st.Workspace, id).Audit); err == nil {
			recs = r
		}
	}
	// The query also has records not yet saved to the file.
	v, err := c.QueryWorkflow(ctx, id, "", jobapi.AuditQuery)
	if forgotten(err) && recs == nil {
		// Past the server's retention: the file on this host is the record.
		if files, ok := findJobFiles(id); ok {
			r, rerr := activities.ReadAudit(files.Audit)
			if rerr != nil {
				return fmt.Errorf("audit of %s from %s: %w", id, files.Audit, rerr)
			}
			recs = r
		}
	}
	if err != nil && recs == nil {
		return fmt.Errorf("audit of %s: %w", id, err)
	}
	if err == nil {
		var q []approval.AuditRecord
		if err := v.Get(&q); err != nil {
			return fmt.Errorf("audit of %s: %w", id, err)
		}
		recs = policyreplay.MergeRecords(recs, q)
	}
	if *asJSON {
		enc := json.NewEncoder(a.Stdout)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tCALL\tTOOL\tDECISION\tLAYER\tRULE/HOOK\tBY\tWAIT\tREASON")
	for _, r := range recs {
		what := string(r.Decision)
		if r.Event != "" {
			what = r.Event
		}
		rule := r.Rule
		if r.Hook != "" && rule == "" {
			rule = r.Hook
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.Time.Local().Format("15:04:05"), shownID(r.CallID), display.Line(r.Tool, maxID),
			what, r.Layer, display.Line(rule, maxReason), display.Line(r.Approver, maxID), (time.Duration(r.WaitMillis) * time.Millisecond).Round(100*time.Millisecond), taskLine(r.Reason, 80))
	}
	return tw.Flush()
}

// viewInput shows a tool input for a person, whole and escaped
// (display.Input): one "key: value" line per field, multi-line strings (a
// Write's content, an Edit's strings) as indented blocks after the one-line
// fields. Anything that is not a JSON object is shown as indented JSON.
func viewInput(raw json.RawMessage) string {
	return indent(display.Input(raw), "    ")
}
