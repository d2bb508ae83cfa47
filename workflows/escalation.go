package workflows

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/workflows/calltext"
)

// askTimeout is how long a call waits for a person: the deadline of the
// ask rule that asks (permissions.ask {"rule", "timeout"}), else the job's.
// Either way, when it passes the call is denied.
func (j *job) askTimeout(found approval.Findings) time.Duration {
	if r := found.Rules; r.Decision == approval.Ask && r.Rule != "" {
		if d, ok := j.st.Settings.Approval.AskTimeouts[r.Rule]; ok && d > 0 {
			return time.Duration(d)
		}
	}
	return j.in.ApprovalTimeout
}

// escalate starts the user's approval.escalation steps for a waiting call:
// each step that comes before its deadline tells its channel, on a timer,
// if nobody has answered by then. The returned func stops those still to
// come (the call left layer 5).
func (j *job) escalate(ctx workflow.Context, p *pendingCall, timeout time.Duration) func() {
	steps := j.st.Settings.Approval.Escalation
	if len(steps) == 0 || workflow.GetVersion(ctx, "escalation", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return func() {}
	}
	ectx, stop := workflow.WithCancel(ctx)
	for i, s := range steps {
		after := time.Duration(s.After)
		if after >= timeout {
			continue // the deadline denies first
		}
		workflow.Go(ectx, func(ctx workflow.Context) {
			t := workflow.NewTimerWithOptions(ctx, after, workflow.TimerOptions{
				Summary: fmt.Sprintf("escalate %s (step %d)", p.ask.CallID, i+1)})
			if t.Get(ctx, nil) != nil || p.result != nil || p.answer != nil {
				return
			}
			j.escalateStep(ctx, p, i, s, timeout-after)
		})
	}
	return stop
}

// escalateStep records the step and hands it to the worker's channel.
func (j *job) escalateStep(ctx workflow.Context, p *pendingCall, i int, s approval.EscalationStep, left time.Duration) {
	to := s.Notify
	if s.To != "" {
		to += " " + s.To
	}
	text := fmt.Sprintf("escalated after %s to %s: nobody has answered; denied in %s unless someone does", time.Duration(s.After), to, left)
	j.audit(ctx, approval.AuditRecord{Event: "escalated", CallID: p.ask.CallID, Tool: p.ask.Tool, Layer: approval.LayerHuman, Reason: text})
	j.emit(ctx, Event{Kind: "escalated", CallID: p.ask.CallID, Tool: p.ask.Tool, Text: text})
	if !slices.Contains(j.st.Notifiers, s.Notify) {
		j.notifyFailed(ctx, p.ask.CallID, fmt.Sprintf("could not escalate (step %d)", i+1),
			fmt.Errorf("this worker has no %s channel configured", s.Notify))
		return
	}
	msg := notify.Escalation{Pending: j.pendingMessage(p), Step: i + 1, After: time.Duration(s.After), Notify: s.Notify, To: s.To}
	j.background(ctx, func(ctx workflow.Context) {
		actx := workflow.WithActivityOptions(ctx, withSummary(notifyOptions, fmt.Sprintf("escalate %s to %s", calltext.UISummary(p.ask.Tool, p.ask.Input), s.Notify)))
		if err := workflow.ExecuteActivity(actx, notify.NotifyEscalateActivity, msg).Get(ctx, nil); err != nil {
			j.notifyFailed(ctx, p.ask.CallID, fmt.Sprintf("could not escalate (step %d)", i+1), err)
		}
	})
}
