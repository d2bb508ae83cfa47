package policyreplay

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/display"
)

// maxLine bounds a summary or reason in the text output; display.Line
// keeps head and tail, so a command's end is never lost.
const maxLine = 160

// WriteText prints a replay for people: the counts, what was assumed, then
// every change, loudest kind first, each with what happened then (and who
// answered) and what the proposal would do.
func WriteText(w io.Writer, rep *Report) error {
	var b strings.Builder
	changed := len(rep.Changes)
	fmt.Fprintf(&b, "replayed %d calls of %d jobs: %d would change, %d stay", rep.Calls, rep.Jobs, changed, rep.Unchanged)
	if rep.Skipped > 0 {
		fmt.Fprintf(&b, ", %d refused before the policy (no policy changes them)", rep.Skipped)
	}
	b.WriteString("\n")
	for _, c := range rep.Counts {
		fmt.Fprintf(&b, "  %5d  %s (%s)\n", c.Count, c.Kind.Title(), c.Kind)
	}
	for _, a := range rep.Assumed {
		fmt.Fprintf(&b, "assumed: %s\n", a)
	}
	var last Kind
	for _, c := range rep.Changes {
		if c.Kind != last {
			fmt.Fprintf(&b, "\n%s:\n", strings.ToUpper(c.Kind.Title()))
			last = c.Kind
		}
		writeChange(&b, c)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeChange(b *strings.Builder, c Change) {
	fmt.Fprintf(b, "  %s %s #%d %s  %s (mode %s)\n", c.Time.UTC().Format("2006-01-02 15:04"), display.Line(c.JobID, 60),
		c.Seq, display.Line(c.CallID, 40), display.Line(c.Summary, maxLine), c.Mode)
	fmt.Fprintf(b, "      then: %s\n", outcomeText(c.Then, true))
	if c.Now != nil {
		fmt.Fprintf(b, "      now:  %s\n", outcomeText(*c.Now, false))
	} else {
		b.WriteString("      now:  unknown: a command hook would decide, and hooks are not run by a replay\n")
	}
	for _, n := range c.Notes {
		fmt.Fprintf(b, "      note: %s\n", n)
	}
}

// outcomeText says an outcome in one line: decision and layer, the rule or
// hook, who answered (then) or that a person would be asked (now).
func outcomeText(o Outcome, then bool) string {
	var parts []string
	switch {
	case o.Decision == approval.Ask:
		parts = append(parts, "ask a person")
	case o.Layer == approval.LayerHuman && then:
		by := o.By
		if by == "" {
			by = "someone"
		}
		if o.Channel != "" {
			by += " (" + o.Channel + ")"
		}
		parts = append(parts, fmt.Sprintf("%s by %s", o.Decision, display.Line(by, 60)))
	default:
		parts = append(parts, fmt.Sprintf("%s at %s", o.Decision, o.Layer))
	}
	if o.Rule != "" {
		kind := "rule"
		if o.System {
			kind = "system rule"
		}
		parts = append(parts, kind+" "+display.Line(o.Rule, maxLine))
	}
	if o.Hook != "" && o.Hook != o.Rule {
		parts = append(parts, "hook "+display.Line(o.Hook, maxLine))
	}
	if o.Reason != "" {
		parts = append(parts, "\""+display.Line(o.Reason, maxLine)+"\"")
	}
	return strings.Join(parts, ", ")
}

// WriteStats prints audit statistics for people.
func WriteStats(w io.Writer, st *Stats) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d calls in %d jobs, %d prompts (a person asked), %d timed out\n", st.Calls, st.Jobs, st.Prompts, st.Timeouts)
	b.WriteString("\nanswered by:\n")
	for _, s := range st.AnsweredBy {
		fmt.Fprintf(&b, "  %-10s %6d  %5.1f%%\n", s.By, s.Count, s.Percent)
	}
	fmt.Fprintf(&b, "\nwait for a person (%d answers): median %s, p99 %s\n", st.Wait.Answered, millis(st.Wait.MedianMs), millis(st.Wait.P99Ms))
	b.WriteString("\nprompts per job:\n")
	for _, j := range st.PerJob {
		fmt.Fprintf(&b, "  %-24s %5d of %5d calls  %s\n", display.Line(j.Job, 60), j.Prompts, j.Calls, display.Line(j.Workspace, 80))
	}
	b.WriteString("\nprompts per hour (UTC):\n")
	for _, h := range st.PerHour {
		fmt.Fprintf(&b, "  %s  %5d\n", h.Hour.UTC().Format("2006-01-02 15:04"), h.Prompts)
	}
	b.WriteString("\nrules that decided most:\n")
	for _, r := range st.TopRules {
		sys := ""
		if r.System {
			sys = " (system)"
		}
		fmt.Fprintf(&b, "  %5d  %s%s\n", r.Count, display.Line(r.Rule, maxLine), sys)
	}
	b.WriteString("\nrules that never decided (current settings):\n")
	for _, r := range st.UnusedRules {
		fmt.Fprintf(&b, "  %-5s %s  (%s)\n", r.List, display.Line(r.Rule, maxLine), display.Line(r.Workspace, 80))
	}
	b.WriteString("\nasked and always approved (see: starter policy suggest):\n")
	for _, a := range st.AlwaysApproved {
		fmt.Fprintf(&b, "  %5d  %s  by %s\n", a.Count, display.Line(a.Rule, maxLine), display.Line(strings.Join(a.Approvers, ", "), 80))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func millis(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}

// maxEvidence bounds the calls listed per suggestion in the text output
// (the JSON has them all).
const maxEvidence = 5

// WriteSuggestions prints suggested rules for people, each with the past
// approvals it would have allowed and the other calls it covers.
func WriteSuggestions(w io.Writer, s *Suggestions) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d approvals and %d denials in the record; rules covering at least %d approvals and no denial:\n", s.Approvals, s.Denials, s.Min)
	if len(s.Suggestions) == 0 {
		b.WriteString("  none\n")
	}
	for _, sg := range s.Suggestions {
		fmt.Fprintf(&b, "\n  %s\n", display.Line(sg.Rule, maxLine))
		fmt.Fprintf(&b, "    would have allowed %d approvals without asking:\n", len(sg.Approvals))
		writeEvidence(&b, sg.Approvals)
		if len(sg.Also) > 0 {
			fmt.Fprintf(&b, "    also covers %d calls allowed otherwise:\n", len(sg.Also))
			writeEvidence(&b, sg.Also)
		}
	}
	if len(s.Rejected) > 0 {
		b.WriteString("\nnot suggested:\n")
		for _, r := range s.Rejected {
			fmt.Fprintf(&b, "  %s: %s\n", display.Line(r.Rule, maxLine), display.Line(r.Why, 2*maxLine))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeEvidence(b *strings.Builder, evs []Evidence) {
	for i, e := range evs {
		if i == maxEvidence {
			fmt.Fprintf(b, "      … and %d more (--json lists them all)\n", len(evs)-maxEvidence)
			return
		}
		fmt.Fprintf(b, "      %s #%d  %s  (%s)\n", display.Line(e.JobID, 60), e.Seq, display.Line(e.Summary, maxLine), outcomeText(e.Then, true))
	}
}
