// Package details writes what the Web UI shows of a job (its current
// details: what it does, what waits for whom and how to answer) and how a
// call left layer 5, as people read it. The Web UI renders markdown: what
// the model chose (summaries, call IDs, reasons that quote commands) is
// display text (package display) in code spans, a preview in a fence, so
// neither an escape sequence nor markdown in it is interpreted. Plain data
// in, text out; it never imports workflows.
package details

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
	"github.com/custos-dev/custos/workflows/quorum"
	"github.com/custos-dev/custos/workflows/tokens"
)

// How a call left layer 5 when nobody answered: its deadline denied it,
// the job was canceled, or an interrupt stopped it.
const (
	AnswerTimeout     = "timeout"
	AnswerCanceled    = "canceled"
	AnswerInterrupted = "interrupted"
)

// Closed says how a call that no longer waits was decided (timeout: the
// job's deadline, when r does not say its own).
func Closed(r jobapi.DecideResult, timeout time.Duration) string {
	at := r.At.UTC().Format("15:04:05 UTC")
	switch r.Answer {
	case AnswerTimeout:
		return fmt.Sprintf("denied by the %s timer at %s (nobody answered in time)", cmp.Or(r.Timeout, timeout), at)
	case AnswerCanceled:
		return fmt.Sprintf("denied at %s: the job was canceled", at)
	case AnswerInterrupted:
		return fmt.Sprintf("denied at %s: %s", at, cmp.Or(r.Reason, "interrupted"))
	}
	verb := "allowed"
	if r.Decision != approval.Allow {
		verb = "denied"
	}
	if r.Answer == "always" || r.Answer == "never" {
		verb += " (" + r.Answer + ")"
	}
	return fmt.Sprintf("%s by %s at %s", verb, calltext.Who(r.By, r.Channel), at)
}

// Head is the details' first lines: the turn, mode and phase, the host
// that holds the workspace, the instruction files the model was given (st
// is nil while the job starts).
func Head(b *strings.Builder, st *jobapi.State, phase, host, workspace string) {
	turn, mode := 0, approval.Mode("")
	if st != nil {
		turn, mode = st.Turn, st.Mode
	}
	fmt.Fprintf(b, "**custos** — turn %d, mode `%s`, %s\n\n", turn, mode, phase)
	if host != "" {
		fmt.Fprintf(b, "Workspace %s on host %s: its tools run only there, and wait while that host's worker is away.\n\n", calltext.CodeSpan(display.Line(workspace, 0)), calltext.CodeSpan(display.Line(host, 0)))
	}
	if st != nil && len(st.Instructions) > 0 {
		b.WriteString("Project instructions given to the model: ")
		for i, f := range st.Instructions {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "%s (%s)", calltext.CodeSpan(display.Line(f.Path, 200)), f.Size())
		}
		b.WriteString(".\n\n")
	}
}

// Pending lists the calls that wait for a person, in the order they
// asked, each with the exact Update or signal that answers it (and a
// grant's, when grants is set).
func Pending(b *strings.Builder, asks []jobapi.PendingAsk, grants bool) {
	if len(asks) == 0 {
		b.WriteString("No approval pending.\n")
	} else {
		fmt.Fprintf(b, "### Waiting for approval (%d)\n\n", len(asks))
	}
	for _, a := range asks {
		id := a.CallID
		payload, _ := json.Marshal(jobapi.ApprovalDecision{CallID: id, Decision: "allow", By: "web-ui", Channel: "web-ui"})
		fmt.Fprintf(b, "**%s** — call %s, denied at %s unless answered.\n\n", calltext.UISummary(a.Tool, a.Input), calltext.CodeSpan(display.Line(id, 200)),
			a.Deadline.UTC().Format("2006-01-02 15:04:05Z"))
		if a.Reason != "" {
			fmt.Fprintf(b, "Why it asks: %s\n\n", calltext.CodeSpan(display.Line(a.Reason, 500)))
		}
		if len(a.Quorum) > 0 {
			fmt.Fprintf(b, "Needs approvals from verified people (Slack): still %s; approved so far: %s.\n\n",
				calltext.CodeSpan(display.Line(jobapi.QuorumNeeded(a.Quorum), 500)),
				calltext.CodeSpan(display.Line(strings.Join(quorum.OrList(jobapi.QuorumVoters(a.Quorum), "nobody"), ", "), 500)))
		}
		if a.Preview != "" {
			// A fence the preview cannot close early.
			fmt.Fprintf(b, "~~~~~~\n%s\n~~~~~~\n\n", strings.ReplaceAll(display.Safe(a.Preview), "~~~~~~", "~ ~ ~"))
		}
		if len(a.Quorum) > 0 {
			// The Web UI verifies nobody: only a denial from here counts.
			deny, _ := json.Marshal(jobapi.ApprovalDecision{CallID: id, Decision: "deny", By: "web-ui", Channel: "web-ui"})
			fmt.Fprintf(b, "Approvals count only from verified people (Slack, a deployed inbox). From here you may deny it: Update `%s`, input `%s`.\n\n",
				jobapi.DecideUpdate, deny)
			continue
		}
		fmt.Fprintf(b, "Answer with Update `%s` (tells you whether it counted) or Signal `%s`, input `%s` — decision `allow`, `deny`, `always` or `never`.\n\n",
			jobapi.DecideUpdate, jobapi.ApprovalSignal, payload)
		if a.Rule != "" && grants {
			fmt.Fprintf(b, "To also allow %s for a while, add `\"grant\": {\"for\": \"30m\"}` to an allow (`\"scope\": \"workspace\"` for every job of the workspace).\n\n",
				calltext.CodeSpan(display.Line(a.Rule, 500)))
		}
	}
}

// Recent lists the calls that left layer 5 last, newest first.
func Recent(b *strings.Builder, recent []jobapi.DecideResult, timeout time.Duration) {
	if len(recent) == 0 {
		return
	}
	b.WriteString("### Recently decided\n\n")
	for i := len(recent) - 1; i >= 0; i-- {
		r := recent[i]
		fmt.Fprintf(b, "- %s %s — %s\n", calltext.CodeSpan(display.Line(r.CallID, 200)), calltext.CodeSpan(display.SafeLine(r.Summary)), display.SafeLine(Closed(r, timeout)))
	}
}

// Conversation shows that the job waits for a message (since, until its
// idle limit ends it) and how to send one, or how many messages wait for
// the model's next call.
func Conversation(b *strings.Builder, waiting bool, since, until time.Time, lastAnswer string, queued int) {
	if waiting {
		payload, _ := json.Marshal(jobapi.Message{Text: "…", By: "web-ui", Channel: "web-ui"})
		fmt.Fprintf(b, "### Waiting for a message\n\nSince %s; the job ends by itself at %s unless a message comes. "+
			"Send one with Update `%s` (or Signal `%s`), input `%s`; end the job with Update `%s`.\n\n",
			since.UTC().Format("2006-01-02 15:04:05Z"), until.UTC().Format("2006-01-02 15:04:05Z"),
			jobapi.MessageUpdate, jobapi.MessageSignal, payload, jobapi.EndUpdate)
		if lastAnswer != "" {
			fmt.Fprintf(b, "Last answer:\n\n~~~~~~\n%s\n~~~~~~\n\n", strings.ReplaceAll(display.Safe(calltext.FirstLines(lastAnswer, 40)), "~~~~~~", "~ ~ ~"))
		}
	} else if queued > 0 {
		fmt.Fprintf(b, "%d message(s) wait for the model's next call.\n\n", queued)
	}
}

// Budget shows that the job waits for its budget (the cap reached: "job"
// or "message"; "" when none is).
func Budget(b *strings.Builder, reached string, s jobapi.BudgetStatus) {
	if reached == "" {
		return
	}
	fmt.Fprintf(b, "### Waiting for a budget\n\nThe token budget of the %s is reached (%s). Raise it with Update `%s`, input `{\"tokensPerJob\": N}` or `{\"tokensPerMessage\": N}`, or end the job with Update `%s`.\n\n",
		reached, tokens.Text(s, reached), jobapi.BudgetUpdate, jobapi.EndUpdate)
}
