package policyreplay

import (
	"fmt"
	"io"
	"strings"

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
