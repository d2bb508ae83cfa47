// Package notify tells people outside the terminal that a tool call waits for
// them, and later what became of it: Slack, webhooks, anything a team uses.
// The workflow calls two activities (NotifyPendingActivity, then
// NotifyDecidedActivity); the worker fans each out to its configured
// Notifiers in parallel. Notifiers must be idempotent: Temporal retries the
// activity, and a retry must never post twice.
package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
)

// Activity names, on the main task queue.
const (
	NotifyPendingActivity = "NotifyPending"
	NotifyDecidedActivity = "NotifyDecided"
	NotifyNoticeActivity  = "NotifyNotice"
	// NotifyEscalateActivity tells one channel that a call still waits,
	// a step of the user's approval.escalation.
	NotifyEscalateActivity = "NotifyEscalate"
)

// How a person answers, as the payloads say it (the names are the
// workflow's; they are repeated here so channels need not import it).
const (
	DecideUpdate   = "decide"
	ApprovalSignal = "approval"
	ModeUpdate     = "mode"
)

// Pending is a tool call that started waiting for a person. Summary and
// Preview are display text (rendered by package display: nothing in them is
// interpreted by a screen); Reason and the IDs are as the job has them, and
// Input is the exact JSON the tool runs with. A channel shows Summary and
// Preview through display.SafeLine and display.Safe, anything else through
// display's other functions.
type Pending struct {
	JobID     string          `json:"jobId"`
	CallID    string          `json:"callId"`
	Tool      string          `json:"tool"`
	Summary   string          `json:"summary"`
	Input     json.RawMessage `json:"input"`
	Workspace string          `json:"workspace"`
	Mode      string          `json:"mode"`
	// Reason says why it asks: the rule or mode.
	Reason string `json:"reason,omitempty"`
	// Preview shows what the call would do: a unified diff for Write/Edit,
	// the parsed commands and sandbox allowances for Bash.
	Preview string `json:"preview,omitempty"`
	// Rule is the rule Always would save, and a grant grants.
	Rule string `json:"rule,omitempty"`
	// Quorum is set when the call needs several people's approvals
	// (settings "approvals"): Always, Never and grants do not stand in for
	// them, so a channel offers only Allow (a vote) and Deny.
	Quorum   bool      `json:"quorum,omitempty"`
	AskedAt  time.Time `json:"askedAt"`
	Deadline time.Time `json:"deadline"`
	Answer   HowTo     `json:"answer"`
	// Parent is set when the job is a subagent: the call waits in the
	// child (JobID) and is answered there.
	Parent *Parent `json:"parent,omitempty"`
}

// Parent names the job that started a subagent, and its Task call.
type Parent struct {
	Job         string `json:"job"`
	CallID      string `json:"callId"`
	Description string `json:"description,omitempty"`
	Subagent    string `json:"subagent,omitempty"`
}

// HowTo tells a receiver how to answer the call through Temporal.
type HowTo struct {
	WorkflowID string `json:"workflowId"`
	Update     string `json:"update"`
	Signal     string `json:"signal"`
	// Payload is the JSON to send, with decision "allow"; the decision may be
	// allow, deny, always or never.
	Payload json.RawMessage `json:"payload"`
}

// Decided is the outcome of a call that waited.
type Decided struct {
	JobID   string `json:"jobId"`
	CallID  string `json:"callId"`
	Tool    string `json:"tool"`
	Summary string `json:"summary"`
	// Decision is the final one: allow or deny.
	Decision string `json:"decision"`
	// Answer is what the person answered (allow, deny, always, never), or
	// "timeout" or "canceled" when nobody did.
	Answer  string    `json:"answer"`
	By      string    `json:"by,omitempty"`
	Channel string    `json:"channel,omitempty"`
	Rule    string    `json:"rule,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
	// Refs are the references the notifiers returned for the Pending
	// message of this call (for example a Slack message), by notifier name.
	Refs map[string]string `json:"refs,omitempty"`
	// Parent: as in Pending.
	Parent *Parent `json:"parent,omitempty"`
}

// Kinds of Notice.
const (
	KindModelWait      = "model-wait"
	KindModelRecovered = "model-recovered"
	// KindDiskFull: the job could not save its transcript and audit
	// because custos' state directory is full; it runs no tool call until
	// a save goes through. KindDiskRecovered: it did, the job goes on.
	KindDiskFull      = "disk-full"
	KindDiskRecovered = "disk-recovered"
	// KindAnswer: the job answered (Text) and waits for the next message.
	KindAnswer = "answer"
	// KindMessage: a person's message (Text) was added to the
	// conversation, By whom, from Channel.
	KindMessage = "message"
	// KindRewind: a person took the job back to an earlier turn (its
	// files, its conversation or both; Text says which and what stays).
	KindRewind = "rewind"
	// KindFork: a job was started from another's conversation at a turn.
	KindFork = "fork"
)

// Notice is news of a job that asks nothing of a call: the job waits for
// the model endpoint (Kind "model-wait", with what to fix and how to make
// it try now) or goes on again ("model-recovered"), the job answered
// ("answer"), or someone's message was added to it ("message"). Text, Fix
// and Error are what the job (or the person) says: a channel shows them
// through display, and never reads a command in them.
type Notice struct {
	JobID     string `json:"jobId"`
	Workspace string `json:"workspace"`
	Kind      string `json:"kind"`
	Text      string `json:"text"`
	// By and Channel say who sent a "message" and from where.
	By      string    `json:"by,omitempty"`
	Channel string    `json:"channel,omitempty"`
	Fix     string    `json:"fix,omitempty"`
	Error   string    `json:"error,omitempty"`
	At      time.Time `json:"at"`
	// Retry names the Update that makes the job try now ("" when there is
	// nothing to retry).
	Retry string `json:"retry,omitempty"`
}

// Escalation is a step of approval.escalation: nobody has answered the
// call After it was asked; tell channel Notify (to To, when set: a Slack
// channel or mention, a webhook URL), before its Deadline denies it.
type Escalation struct {
	Pending
	Step   int           `json:"step"`
	After  time.Duration `json:"after"`
	Notify string        `json:"notify"`
	To     string        `json:"to,omitempty"`
}

// Escalator is a channel that escalates.
type Escalator interface {
	Escalate(ctx context.Context, e Escalation) error
}

// NotifyEscalate hands an escalation step to the channel it names.
func (a *Activities) NotifyEscalate(ctx context.Context, e Escalation) error {
	for _, n := range a.Notifiers {
		if n.Name() != e.Notify {
			continue
		}
		if es, ok := n.(Escalator); ok {
			return es.Escalate(ctx, e)
		}
		return fmt.Errorf("%s cannot escalate", e.Notify)
	}
	return fmt.Errorf("no %s channel on this worker", e.Notify)
}

// Noticer is a channel that also tells people of Notices.
type Noticer interface {
	Notice(ctx context.Context, n Notice) error
}

// Notifier is one channel.
type Notifier interface {
	// Name is the key of the notifier's references ("slack", "webhook").
	Name() string
	// Pending announces a waiting call and returns a reference to what it
	// posted ("" when there is nothing to refer to later). It is called
	// again on a retry and must then return the same reference without
	// posting again.
	Pending(ctx context.Context, p Pending) (ref string, err error)
	// Decided updates what Pending posted (ref may be "" if it failed).
	Decided(ctx context.Context, d Decided, ref string) error
}

// Activities fans notifications out to the notifiers.
type Activities struct {
	Notifiers []Notifier
}

// PendingResult carries the notifiers' references.
type PendingResult struct {
	Refs map[string]string `json:"refs,omitempty"`
}

// NotifyPending tells every notifier, in parallel, that a call waits. When
// one fails, the activity fails (and is retried) after all have been tried;
// notifiers that succeeded are idempotent on the retry.
func (a *Activities) NotifyPending(ctx context.Context, p Pending) (PendingResult, error) {
	res := PendingResult{Refs: map[string]string{}}
	var mu sync.Mutex
	err := a.each(ctx, func(ctx context.Context, n Notifier) error {
		ref, err := n.Pending(ctx, p)
		if err != nil {
			return err
		}
		mu.Lock()
		res.Refs[n.Name()] = ref
		mu.Unlock()
		return nil
	})
	return res, err
}

// NotifyDecided tells every notifier the outcome.
func (a *Activities) NotifyDecided(ctx context.Context, d Decided) error {
	return a.each(ctx, func(ctx context.Context, n Notifier) error {
		return n.Decided(ctx, d, d.Refs[n.Name()])
	})
}

// NotifyNotice tells every notifier that takes Notices.
func (a *Activities) NotifyNotice(ctx context.Context, n Notice) error {
	return a.each(ctx, func(ctx context.Context, nf Notifier) error {
		if nc, ok := nf.(Noticer); ok {
			return nc.Notice(ctx, n)
		}
		return nil
	})
}

func (a *Activities) each(ctx context.Context, fn func(context.Context, Notifier) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(a.Notifiers))
	for i, n := range a.Notifiers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx, n); err != nil {
				errs[i] = fmt.Errorf("%s: %w", n.Name(), err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Register registers the activities on a worker.
func (a *Activities) Register(r interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}) {
	r.RegisterActivityWithOptions(a.NotifyPending, activity.RegisterOptions{Name: NotifyPendingActivity})
	r.RegisterActivityWithOptions(a.NotifyDecided, activity.RegisterOptions{Name: NotifyDecidedActivity})
	r.RegisterActivityWithOptions(a.NotifyNotice, activity.RegisterOptions{Name: NotifyNoticeActivity})
	r.RegisterActivityWithOptions(a.NotifyEscalate, activity.RegisterOptions{Name: NotifyEscalateActivity})
}

// Names lists the notifiers, sorted, for logs and events.
func (a *Activities) Names() []string {
	out := make([]string, 0, len(a.Notifiers))
	for _, n := range a.Notifiers {
		out = append(out, n.Name())
	}
	sort.Strings(out)
	return out
}
