package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/workflows/calltext"
)

// notifyOptions: channels are best effort. A slow or dead channel retries in
// the background and never holds up the job; the timer still denies.
var notifyOptions = workflow.ActivityOptions{
	StartToCloseTimeout:    20 * time.Second,
	ScheduleToCloseTimeout: 5 * time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    30 * time.Second,
	},
}

// notifyPending tells the worker's channels that p waits, in a coroutine.
func (j *job) notifyPending(ctx workflow.Context, p *pendingCall) {
	if len(j.st.Notifiers) == 0 {
		return
	}
	msg := j.pendingMessage(p)
	refs, settle := workflow.NewFuture(ctx)
	p.refs = refs
	j.background(ctx, func(ctx workflow.Context) {
		actx := workflow.WithActivityOptions(ctx, withSummary(notifyOptions, "announce "+calltext.UISummary(p.ask.Tool, p.ask.Input)))
		var res notify.PendingResult
		err := workflow.ExecuteActivity(actx, notify.NotifyPendingActivity, msg).Get(ctx, &res)
		settle.Set(res.Refs, nil) // nil refs on failure: Decided still tries
		if err != nil {
			j.notifyFailed(ctx, p.ask.CallID, "could not announce the call", err)
		}
	})
}

// pendingMessage is what the channels are told of a waiting call.
func (j *job) pendingMessage(p *pendingCall) notify.Pending {
	payload, _ := json.Marshal(ApprovalDecision{CallID: p.ask.CallID, Decision: "allow", By: "you"})
	return notify.Pending{
		JobID: j.id, CallID: p.ask.CallID, Tool: p.ask.Tool, Summary: p.ask.Summary, Input: p.ask.Input,
		Workspace: j.in.Workspace, Mode: string(j.st.Mode), Reason: p.ask.Reason, Preview: p.ask.Preview,
		AskedAt: p.ask.AskedAt, Deadline: p.ask.Deadline, Rule: p.ask.Rule, Quorum: len(p.ask.Quorum) > 0,
		Answer: notify.HowTo{WorkflowID: j.id, Update: DecideUpdate, Signal: ApprovalSignal, Payload: payload},
		Parent: j.notifyParent(),
	}
}

// notifyParent names a subagent's parent to the channels (nil for a job of
// its own).
func (j *job) notifyParent() *notify.Parent {
	if p := j.in.Parent; p != nil {
		return &notify.Parent{Job: p.Job, CallID: p.CallID, Description: p.Description, Subagent: p.Ref().Subagent}
	}
	return nil
}

// notifyDecided tells the channels the outcome, once the announcement has
// settled (so a Slack message can be updated in place).
func (j *job) notifyDecided(ctx workflow.Context, p *pendingCall, res DecideResult) {
	if len(j.st.Notifiers) == 0 || p.refs == nil {
		return
	}
	j.background(ctx, func(ctx workflow.Context) {
		var refs map[string]string
		_ = p.refs.Get(ctx, &refs)
		msg := notify.Decided{JobID: j.id, CallID: res.CallID, Tool: res.Tool, Summary: res.Summary,
			Decision: string(res.Decision), Answer: res.Answer, By: res.By, Channel: res.Channel, Rule: res.Rule,
			Reason: res.Reason, At: res.At, Refs: refs, Parent: j.notifyParent()}
		actx := workflow.WithActivityOptions(ctx, withSummary(notifyOptions, fmt.Sprintf("report %s: %s", res.Answer, calltext.UISummary(res.Tool, p.ask.Input))))
		if err := workflow.ExecuteActivity(actx, notify.NotifyDecidedActivity, msg).Get(ctx, nil); err != nil {
			j.notifyFailed(ctx, res.CallID, "could not report the outcome", err)
		}
	})
}

// background runs fn in its own coroutine, on a context a job's
// cancellation does not reach (the channels still learn that a canceled
// job's calls were denied), and counts it until it returns.
func (j *job) background(ctx workflow.Context, fn func(ctx workflow.Context)) {
	j.notifying++
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	workflow.Go(dctx, func(ctx workflow.Context) {
		defer func() { j.notifying-- }()
		fn(ctx)
	})
}

func (j *job) notifyFailed(ctx workflow.Context, callID, what string, err error) {
	text := fmt.Sprintf("%s to %s: %v", what, strings.Join(j.st.Notifiers, ", "), err)
	j.audit(ctx, approval.AuditRecord{Event: "notify-failed", CallID: callID, Reason: text})
	j.emit(ctx, Event{Kind: "error", CallID: callID, Text: text})
}

// awaitNotifications gives running notifications a bounded time to finish
// before the run ends; it never waits when none runs, so jobs without
// channels keep their history shape.
func (j *job) awaitNotifications(ctx workflow.Context) {
	if j.notifying == 0 {
		return
	}
	_, _ = workflow.AwaitWithTimeout(ctx, time.Minute, func() bool { return j.notifying == 0 })
}

func withSummary(o workflow.ActivityOptions, summary string) workflow.ActivityOptions {
	o.Summary = summary
	return o
}
