// Package compaction keeps the job's conversation within the model's
// context window: before a model call whose prompt would pass the
// threshold, and again when the endpoint refuses a prompt as too long, a
// model call without tools summarises the older part. It never imports
// workflows; the job hands it a Host.
package compaction

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/workflows/jobapi"
	"github.com/custos-dev/custos/workflows/parking"
	"github.com/custos-dev/custos/workflows/tokens"
)

// Host is what of the job a compaction reads and changes: its state, the
// share of the window a prompt may reach (CompactAt) and its model, the
// activity context on the workspace's host, its conversation as the model
// activity sees it, its hooks, audit and journal (Say: an event of kind),
// and its waits for the model endpoint (Wait).
type Host struct {
	State        func() *jobapi.State
	CompactAt    float64
	Model        string
	OnHost       func(ctx workflow.Context, opts workflow.ActivityOptions) workflow.Context
	Conversation func() *api.Conversation
	RunHooks     func(ctx workflow.Context, point hooks.Point, p hooks.Payload) (hooks.Result, bool)
	Audit        func(ctx workflow.Context, r approval.AuditRecord)
	Say          func(ctx workflow.Context, kind, text string)
	Wait         parking.Host
}

// maxCompactionsPerCall bounds compactions for one model call that the
// endpoint keeps refusing as too long.
const maxCompactionsPerCall = 3

// window is the job's context window.
func window(st *jobapi.State) int {
	return max(st.ContextWindow, 1000)
}

// overThreshold says whether the next prompt, estimated from the usage the
// endpoint reported for the last one plus the messages added since, would
// pass the compaction threshold.
func overThreshold(h Host) (bool, int) {
	st := h.State()
	return tokens.OverThreshold(h.CompactAt, st.LastPrompt, st.Pending, window(st))
}

// compact summarises the older part of the conversation with a model call
// without tools; the job goes on from system prompt + task + summary + the
// most recent turns. tighter > 0 keeps less (the endpoint refused anyway).
func compact(ctx workflow.Context, h Host, why string, tighter int) error {
	st := h.State()
	keep := window(st) * 4 / 10
	if tighter > 0 {
		// Refused as too long: keep at most half of what was sent, less
		// each time.
		_, est := overThreshold(h)
		keep = min(keep, est/2) >> (tighter - 1)
	}
	h.RunHooks(ctx, hooks.PreCompact, hooks.Payload{Reason: why})
	actx := h.OnHost(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
			NonRetryableErrorTypes: []string{api.CompactedNothingType},
		},
		Summary: fmt.Sprintf("turn %d: compact the conversation", st.Turn),
	})
	// The summary is a model call too: a refused key parks it.
	res, err := parking.Model(ctx, h.Wait, func() (api.CompactResult, error) {
		var res api.CompactResult
		err := workflow.ExecuteActivity(actx, api.CompactActivity, api.CompactRequest{
			Conversation: *h.Conversation(), Window: window(st), KeepTokens: keep, Model: h.Model,
		}).Get(ctx, &res)
		return res, err
	})
	if errors.Is(err, parking.ErrContinueParked) {
		return err
	}
	if err != nil {
		h.Say(ctx, "error", "compaction failed: "+err.Error())
		return fmt.Errorf("compact the conversation: %w", err)
	}
	st.Stored(st.Total()) // the activity stored what was pending
	st.Messages = append(st.Messages, res.Message)
	st.Stored(st.Total()) // and the summary
	st.View = res.View
	st.LastPrompt, st.Pending = res.After, 0
	st.Compactions++
	text := fmt.Sprintf("compacted %d messages into a summary (%s); the model now sees about %d of %d tokens (was %d); messages from %d kept verbatim",
		res.Compacted, why, res.After, window(st), res.Before, res.View.From)
	h.Audit(ctx, approval.AuditRecord{Event: "compacted", Reason: text})
	h.Say(ctx, "compact", text)
	h.RunHooks(ctx, hooks.PostCompact, hooks.Payload{Reason: why, Output: res.Summary})
	return nil
}

// Chat is the model call with compaction around it: before, when the prompt
// would pass the threshold; after, when the endpoint answers
// context_length_exceeded anyway.
func Chat(ctx workflow.Context, h Host, call func() (api.ModelResponse, error)) (api.ModelResponse, error) {
	if workflow.GetVersion(ctx, "context-compaction", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return call()
	}
	if over, est := overThreshold(h); over {
		if err := compact(ctx, h, fmt.Sprintf("the prompt would be about %d tokens", est), 0); err != nil {
			return api.ModelResponse{}, err
		}
	}
	for tighter := 0; ; tighter++ {
		resp, err := call()
		var ae *temporal.ApplicationError
		if err == nil || !errors.As(err, &ae) || ae.Type() != api.ContextLengthErrorType || tighter >= maxCompactionsPerCall {
			return resp, err
		}
		h.Say(ctx, "compact", "the endpoint refused the prompt as too long; compacting and calling again")
		if n := tokens.WindowInError(ae.Message()); n > 0 && n < window(h.State()) {
			// The endpoint knows its window better than our table.
			h.State().ContextWindow = n
			h.Say(ctx, "compact", fmt.Sprintf("the endpoint's context window is %d tokens", n))
		}
		if err := compact(ctx, h, "the endpoint answered context_length_exceeded", tighter+1); err != nil {
			return resp, err
		}
	}
}
