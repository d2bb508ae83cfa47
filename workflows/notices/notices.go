// Package notices holds what a job tells the worker's channels (package
// notify): a call that waits for a person, how it was decided, the steps
// that escalate it, and the conversation's notices (an answer, a message,
// the job's end, a wait). Every notice runs in the background, on a
// context the job's cancellation does not reach, and a failed one is
// journalled, never the job's failure. It never imports workflows; the job
// hands it a Host.
package notices

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/workflows/calltext"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Options: channels are best effort. A slow or dead channel retries in
// the background and never holds up the job; the timer still denies.
var Options = workflow.ActivityOptions{
	StartToCloseTimeout:    20 * time.Second,
	ScheduleToCloseTimeout: 5 * time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    30 * time.Second,
	},
}

// WithSummary is o with the summary the Web UI shows for its activity.
func WithSummary(o workflow.ActivityOptions, summary string) workflow.ActivityOptions {
	o.Summary = summary
	return o
}

// Background counts the job's coroutines that outlive its cancellation
// (its notices, a child telling its parent).
type Background struct{ running int }

// Go runs fn in its own coroutine, on a context a job's cancellation does
// not reach (the channels still learn that a canceled job's calls were
// denied), and counts it until it returns.
func (b *Background) Go(ctx workflow.Context, fn func(ctx workflow.Context)) {
	b.running++
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	workflow.Go(dctx, func(ctx workflow.Context) {
		defer func() { b.running-- }()
		fn(ctx)
	})
}

// Await gives running coroutines a bounded time to finish before the run
// ends; it never waits when none runs, so jobs without channels keep
// their history shape.
func (b *Background) Await(ctx workflow.Context) {
	if b.running == 0 {
		return
	}
	_, _ = workflow.AwaitWithTimeout(ctx, time.Minute, func() bool { return b.running == 0 })
}

// Host is what of the job its notices read: its ID, workspace and parent,
// its state (the channels configured, its mode), its audit and journal,
// and the count of what runs in the background.
type Host struct {
	Job, Workspace string
	Parent         *jobapi.ParentLink
	State          func() *jobapi.State
	Audit          func(ctx workflow.Context, r approval.AuditRecord)
	Emit           func(ctx workflow.Context, e jobapi.Event)
	Background     *Background
}

// Pending tells the worker's channels that the call a waits, in a
// coroutine; the future resolves to their references to what they posted
// (nil refs on failure), and is nil when no channel is configured.
func (h Host) Pending(ctx workflow.Context, a jobapi.PendingAsk) workflow.Future {
	if len(h.State().Notifiers) == 0 {
		return nil
	}
	msg := h.Message(a)
	refs, settle := workflow.NewFuture(ctx)
	h.Background.Go(ctx, func(ctx workflow.Context) {
		actx := workflow.WithActivityOptions(ctx, WithSummary(Options, "announce "+calltext.UISummary(a.Tool, a.Input)))
		var res notify.PendingResult
		err := workflow.ExecuteActivity(actx, notify.NotifyPendingActivity, msg).Get(ctx, &res)
		settle.Set(res.Refs, nil) // nil refs on failure: Decided still tries
		if err != nil {
			h.Failed(ctx, a.CallID, "could not announce the call", err)
		}
	})
	return refs
}

// Message is what the channels are told of a waiting call.
func (h Host) Message(a jobapi.PendingAsk) notify.Pending {
	payload, _ := json.Marshal(jobapi.ApprovalDecision{CallID: a.CallID, Decision: "allow", By: "you"})
	return notify.Pending{
		JobID: h.Job, CallID: a.CallID, Tool: a.Tool, Summary: a.Summary, Input: a.Input,
		Workspace: h.Workspace, Mode: string(h.State().Mode), Reason: a.Reason, Preview: a.Preview,
		AskedAt: a.AskedAt, Deadline: a.Deadline, Rule: a.Rule, Quorum: len(a.Quorum) > 0,
		Answer: notify.HowTo{WorkflowID: h.Job, Update: jobapi.DecideUpdate, Signal: jobapi.ApprovalSignal, Payload: payload},
		Parent: ParentOf(h.Parent),
	}
}

// ParentOf names a subagent's parent to the channels (nil for a job of its
// own).
func ParentOf(p *jobapi.ParentLink) *notify.Parent {
	if p != nil {
		return &notify.Parent{Job: p.Job, CallID: p.CallID, Description: p.Description, Subagent: p.Ref().Subagent}
	}
	return nil
}

// Decided tells the channels the outcome, once the announcement (refs,
// Pending's future) has settled, so a Slack message can be updated in
// place; input is the call's.
func (h Host) Decided(ctx workflow.Context, refs workflow.Future, input json.RawMessage, res jobapi.DecideResult) {
	if len(h.State().Notifiers) == 0 || refs == nil {
		return
	}
	h.Background.Go(ctx, func(ctx workflow.Context) {
		var posted map[string]string
		_ = refs.Get(ctx, &posted)
		msg := notify.Decided{JobID: h.Job, CallID: res.CallID, Tool: res.Tool, Summary: res.Summary,
			Decision: string(res.Decision), Answer: res.Answer, By: res.By, Channel: res.Channel, Rule: res.Rule,
			Reason: res.Reason, At: res.At, Refs: posted, Parent: ParentOf(h.Parent)}
		actx := workflow.WithActivityOptions(ctx, WithSummary(Options, fmt.Sprintf("report %s: %s", res.Answer, calltext.UISummary(res.Tool, input))))
		if err := workflow.ExecuteActivity(actx, notify.NotifyDecidedActivity, msg).Get(ctx, nil); err != nil {
			h.Failed(ctx, res.CallID, "could not report the outcome", err)
		}
	})
}

// Failed journals and audits a notice the channels did not take.
func (h Host) Failed(ctx workflow.Context, callID, what string, err error) {
	text := fmt.Sprintf("%s to %s: %v", what, strings.Join(h.State().Notifiers, ", "), err)
	h.Audit(ctx, approval.AuditRecord{Event: "notify-failed", CallID: callID, Reason: text})
	h.Emit(ctx, jobapi.Event{Kind: "error", CallID: callID, Text: text})
}

// Conversation tells the worker's channels of the conversation: an
// answer, a person's message, the job's end.
func (h Host) Conversation(ctx workflow.Context, kind, text, by, channel string) {
	if len(h.State().Notifiers) == 0 {
		return
	}
	n := notify.Notice{JobID: h.Job, Workspace: h.Workspace, Kind: kind, Text: text, By: by, Channel: channel, At: workflow.Now(ctx)}
	h.Announce(ctx, n, "could not announce the "+kind)
}

// Announce tells the worker's channels n, in a coroutine; what names it in
// the journal when it fails.
func (h Host) Announce(ctx workflow.Context, n notify.Notice, what string) {
	if len(h.State().Notifiers) == 0 {
		return
	}
	h.Background.Go(ctx, func(ctx workflow.Context) {
		actx := workflow.WithActivityOptions(ctx, WithSummary(Options, "announce: "+n.Kind))
		if err := workflow.ExecuteActivity(actx, notify.NotifyNoticeActivity, n).Get(ctx, nil); err != nil {
			h.Failed(ctx, "", what, err)
		}
	})
}

// Escalate starts the user's approval.escalation steps for the waiting
// call a: each step that comes before its deadline (timeout) tells its
// channel, on a timer, if the call is not answered by then. The returned
// func stops those still to come (the call left layer 5).
func (h Host) Escalate(ctx workflow.Context, a jobapi.PendingAsk, timeout time.Duration, answered func() bool) func() {
	steps := h.State().Settings.Approval.Escalation
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
				Summary: fmt.Sprintf("escalate %s (step %d)", a.CallID, i+1)})
			if t.Get(ctx, nil) != nil || answered() {
				return
			}
			h.escalateStep(ctx, a, i, s, timeout-after)
		})
	}
	return stop
}

// escalateStep records the step and hands it to the worker's channel.
func (h Host) escalateStep(ctx workflow.Context, a jobapi.PendingAsk, i int, s approval.EscalationStep, left time.Duration) {
	to := s.Notify
	if s.To != "" {
		to += " " + s.To
	}
	text := fmt.Sprintf("escalated after %s to %s: nobody has answered; denied in %s unless someone does", time.Duration(s.After), to, left)
	h.Audit(ctx, approval.AuditRecord{Event: "escalated", CallID: a.CallID, Tool: a.Tool, Layer: approval.LayerHuman, Reason: text})
	h.Emit(ctx, jobapi.Event{Kind: "escalated", CallID: a.CallID, Tool: a.Tool, Text: text})
	if !slices.Contains(h.State().Notifiers, s.Notify) {
		h.Failed(ctx, a.CallID, fmt.Sprintf("could not escalate (step %d)", i+1),
			fmt.Errorf("this worker has no %s channel configured", s.Notify))
		return
	}
	msg := notify.Escalation{Pending: h.Message(a), Step: i + 1, After: time.Duration(s.After), Notify: s.Notify, To: s.To}
	h.Background.Go(ctx, func(ctx workflow.Context) {
		actx := workflow.WithActivityOptions(ctx, WithSummary(Options, fmt.Sprintf("escalate %s to %s", calltext.UISummary(a.Tool, a.Input), s.Notify)))
		if err := workflow.ExecuteActivity(actx, notify.NotifyEscalateActivity, msg).Get(ctx, nil); err != nil {
			h.Failed(ctx, a.CallID, fmt.Sprintf("could not escalate (step %d)", i+1), err)
		}
	})
}
