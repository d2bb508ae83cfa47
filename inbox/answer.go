package inbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Channel is what the page's answers name as where they came from.
const Channel = "web"

// answerTimeout bounds one answer: the Update waits for the job to apply
// it (a worker's workflow task), which takes milliseconds when a worker
// runs and forever when none does.
const answerTimeout = 30 * time.Second

// maxBatch bounds how many calls one POST answers, and batchConcurrency
// how many Updates it has in flight.
const (
	maxBatch         = 500
	batchConcurrency = 8
)

// Answer is one call's answer as the page sends it.
type Answer struct {
	Job      string `json:"job"`
	Call     string `json:"call"`
	Decision string `json:"decision"` // allow, deny, always, never
	Reason   string `json:"reason,omitempty"`
	// Grant, with allow: also allow later calls its rule covers, in a
	// scope, for a while (see jobapi.GrantSpec).
	Grant *GrantChoice `json:"grant,omitempty"`
}

// GrantChoice is the page's "Allow for…" control.
type GrantChoice struct {
	Scope string `json:"scope"` // job or workspace
	// For is a duration ("30m", "1h"); Until an end time: "the rest of
	// the day" is sent as Until, computed by the page (the browser knows
	// the person's time zone, the worker does not).
	For   string    `json:"for,omitempty"`
	Until time.Time `json:"until,omitzero"`
}

// Outcome is what became of one answer, as the page shows it.
type Outcome struct {
	Job     string `json:"job"`
	Call    string `json:"call"`
	Applied bool   `json:"applied"`
	Text    string `json:"text"`
}

// decision is the Update payload for a, from by.
func (a Answer) decision(by string) (jobapi.ApprovalDecision, error) {
	switch a.Decision {
	case "allow", "deny", "always", "never":
	default:
		return jobapi.ApprovalDecision{}, fmt.Errorf("decision %q is not allow, deny, always or never", a.Decision)
	}
	d := jobapi.ApprovalDecision{CallID: a.Call, Decision: a.Decision, Reason: a.Reason, By: by, Channel: Channel}
	if a.Grant != nil {
		if a.Decision != "allow" {
			return d, errors.New("a grant goes with allow only")
		}
		switch a.Grant.Scope {
		case "job", "workspace":
		default:
			return d, fmt.Errorf("grant scope %q is not job or workspace", a.Grant.Scope)
		}
		if (a.Grant.For == "") == a.Grant.Until.IsZero() {
			return d, errors.New("a grant needs exactly one of for and until")
		}
		if a.Grant.For != "" {
			if _, err := time.ParseDuration(a.Grant.For); err != nil {
				return d, fmt.Errorf("grant for %q: %w", a.Grant.For, err)
			}
		}
		d.Grant = &jobapi.GrantSpec{Scope: a.Grant.Scope, For: a.Grant.For, Until: a.Grant.Until}
	}
	return d, nil
}

// answerAll sends every answer as a decide Update, a few at a time, and
// returns their outcomes in order.
//
// vouch, when set, signs the verified person's identity on each answer,
// so that it counts towards the approvals a call may need.
func answerAll(ctx context.Context, c client.Client, answers []Answer, by string, vouch func(job string, d *jobapi.ApprovalDecision)) []Outcome {
	return mapBounded(answers, batchConcurrency, func(a Answer) Outcome {
		return answerOne(ctx, c, a, by, vouch)
	})
}

// mapBounded applies f to every element of in, at most n at a time, and
// returns the results in the order of in.
func mapBounded[T, R any](in []T, n int, f func(T) R) []R {
	out := make([]R, len(in))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, v := range in {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = f(v)
		}()
	}
	wg.Wait()
	return out
}

func answerOne(ctx context.Context, c client.Client, a Answer, by string, vouch func(string, *jobapi.ApprovalDecision)) Outcome {
	o := Outcome{Job: a.Job, Call: a.Call}
	d, err := a.decision(by)
	if err != nil {
		o.Text = "not sent: " + err.Error()
		return o
	}
	if vouch != nil {
		vouch(a.Job, &d)
	}
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	var res jobapi.DecideResult
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: a.Job, UpdateName: jobapi.DecideUpdate, Args: []any{d}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil {
		o.Text = refusalText(err, a.Job)
		if jobEnded(err) {
			o.Text = endedText(ctx, c, a.Job, a.Call, o.Text)
		}
		return o
	}
	o.Applied, o.Text = true, decidedText(res)+grantText(d.Grant, res.Grant)
	return o
}

// grantText says what became of a grant asked for with an answer (a
// worker of an older release keeps none and returns none: the call was
// allowed once).
func grantText(asked *jobapi.GrantSpec, got *jobapi.Grant) string {
	switch {
	case asked == nil:
		return ""
	case got == nil:
		return "; no grant was kept (the job's worker does not keep grants yet): the call was allowed once"
	}
	return fmt.Sprintf("; granted %s in this %s until %s (grant %s)", display.Line(got.Rule, maxRule), display.Line(got.Scope, maxName),
		got.Until.UTC().Format("2006-01-02 15:04 UTC"), display.Line(got.ID, maxName))
}

// jobEnded reports whether err says the job is no longer running.
func jobEnded(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf) || strings.Contains(err.Error(), "workflow execution already completed")
}

// endedText says how a call of an ended job was decided, from its audit
// (a closed workflow still answers queries), so a stale page hears
// "already denied by bob via slack at …", not just "the job has ended".
// fallback is what it says when the audit does not tell.
func endedText(ctx context.Context, c client.Client, job, call, fallback string) string {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	v, err := c.QueryWorkflow(qctx, job, "", jobapi.AuditQuery)
	var recs []approval.AuditRecord
	if err == nil {
		err = v.Get(&recs)
	}
	if err != nil {
		return fallback
	}
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.CallID != call || r.Event != "" || r.Layer != approval.LayerHuman {
			continue
		}
		verb := "allowed"
		if r.Decision != approval.Allow {
			verb = "denied"
		}
		at := r.Time.UTC().Format("15:04:05 UTC")
		if r.Approver == "timeout" {
			return fmt.Sprintf("not applied: already denied by the timer at %s; the job has ended", at)
		}
		return fmt.Sprintf("not applied: already %s by %s at %s; the job has ended", verb, who(r.Approver, r.Channel), at)
	}
	return fallback
}

// decidedText says what an applied answer did: "allowed Write notes.md,
// by alice via web; allow rule Write(notes.md) added".
func decidedText(r jobapi.DecideResult) string {
	if r.Answer == "vote" {
		return fmt.Sprintf("approval of %s by %s counted; still needed: %s", display.SafeLine(r.Summary), who(r.By, r.Channel), display.Line(r.Needed, maxReason))
	}
	verb := "allowed"
	if r.Decision != "allow" {
		verb = "denied"
	}
	s := fmt.Sprintf("%s %s, by %s", verb, display.SafeLine(r.Summary), who(r.By, r.Channel))
	if r.Rule != "" {
		list := "allow"
		if r.Answer == "never" {
			list = "deny"
		}
		s += fmt.Sprintf("; %s rule %s added", list, display.Line(r.Rule, maxRule))
	}
	return s
}

// refusalText says why an answer did not count, in the job's own words
// when the job refused it ("not applied: already denied by bob via slack
// at 14:03:07 UTC").
func refusalText(err error, job string) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && (ae.Type() == "NotApplied" || ae.Type() == "Refused") {
		return display.Line(ae.Message(), maxReason)
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Sprintf("not applied: job %s is not running (it has ended, or never existed)", display.Line(job, maxName))
	}
	msg := err.Error()
	if strings.Contains(msg, "workflow execution already completed") {
		return fmt.Sprintf("not applied: job %s has ended", display.Line(job, maxName))
	}
	return "not applied: could not reach the job: " + display.Line(msg, maxReason)
}

// revoke ends a grant through the revoke Update.
func revoke(ctx context.Context, c client.Client, job, grant, by string) Outcome {
	o := Outcome{Job: job}
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	var g jobapi.Grant
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: job, UpdateName: jobapi.RevokeUpdate, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{jobapi.Revoke{GrantID: grant, By: by, Channel: Channel}},
	})
	if err == nil {
		err = h.Get(ctx, &g)
	}
	if err != nil {
		o.Text = refusalText(err, job)
		return o
	}
	o.Applied, o.Text = true, fmt.Sprintf("revoked grant %s (%s), by %s", display.Line(grant, maxName), display.Line(g.Rule, maxRule), who(by, Channel))
	return o
}
