package workflows

import (
	"errors"
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/workflows/parking"
	"github.com/custos-dev/custos/workflows/tokens"
)

// maxCompactionsPerCall bounds compactions for one model call that the
// endpoint keeps refusing as too long.
const maxCompactionsPerCall = 3

// added accounts for messages appended to the conversation since the last
// model call, for the next call's prompt estimate.
func (j *job) added(msgs ...openai.ChatCompletionMessage) {
	j.st.Pending += api.EstimateTokens(msgs...)
}

// window is the job's context window.
func (j *job) window() int {
	return max(j.st.ContextWindow, 1000)
}

// overThreshold says whether the next prompt, estimated from the usage the
// endpoint reported for the last one plus the messages added since, would
// pass the compaction threshold.
func (j *job) overThreshold() (bool, int) {
	return tokens.OverThreshold(j.in.CompactAt, j.st.LastPrompt, j.st.Pending, j.window())
}

// compact summarises the older part of the conversation with a model call
// without tools; the job goes on from system prompt + task + summary + the
// most recent turns. tighter > 0 keeps less (the endpoint refused anyway).
func (j *job) compact(ctx workflow.Context, why string, tighter int) error {
	keep := j.window() * 4 / 10
	if tighter > 0 {
		// Refused as too long: keep at most half of what was sent, less
		// each time.
		_, est := j.overThreshold()
		keep = min(keep, est/2) >> (tighter - 1)
	}
	j.runHooks(ctx, hooks.PreCompact, hooks.Payload{Reason: why})
	actx := j.onHost(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
			NonRetryableErrorTypes: []string{api.CompactedNothingType},
		},
		Summary: fmt.Sprintf("turn %d: compact the conversation", j.st.Turn),
	})
	// The summary is a model call too: a refused key parks it.
	res, err := parking.Model(ctx, j.waitHost(), func() (api.CompactResult, error) {
		var res api.CompactResult
		err := workflow.ExecuteActivity(actx, api.CompactActivity, api.CompactRequest{
			Conversation: *j.conversation(), Window: j.window(), KeepTokens: keep, Model: j.in.Model,
		}).Get(ctx, &res)
		return res, err
	})
	if errors.Is(err, parking.ErrContinueParked) {
		return err
	}
	if err != nil {
		j.emit(ctx, Event{Kind: "error", Text: "compaction failed: " + err.Error()})
		return fmt.Errorf("compact the conversation: %w", err)
	}
	j.st.Stored(j.st.Total()) // the activity stored what was pending
	j.st.Messages = append(j.st.Messages, res.Message)
	j.st.Stored(j.st.Total()) // and the summary
	j.st.View = res.View
	j.st.LastPrompt, j.st.Pending = res.After, 0
	j.st.Compactions++
	text := fmt.Sprintf("compacted %d messages into a summary (%s); the model now sees about %d of %d tokens (was %d); messages from %d kept verbatim",
		res.Compacted, why, res.After, j.window(), res.Before, res.View.From)
	j.audit(ctx, approval.AuditRecord{Event: "compacted", Reason: text})
	j.emit(ctx, Event{Kind: "compact", Text: text})
	j.runHooks(ctx, hooks.PostCompact, hooks.Payload{Reason: why, Output: res.Summary})
	return nil
}

// chat is the model call with compaction around it: before, when the prompt
// would pass the threshold; after, when the endpoint answers
// context_length_exceeded anyway.
func (j *job) chat(ctx workflow.Context, call func() (api.ModelResponse, error)) (api.ModelResponse, error) {
	if workflow.GetVersion(ctx, "context-compaction", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return call()
	}
	if over, est := j.overThreshold(); over {
		if err := j.compact(ctx, fmt.Sprintf("the prompt would be about %d tokens", est), 0); err != nil {
			return api.ModelResponse{}, err
		}
	}
	for tighter := 0; ; tighter++ {
		resp, err := call()
		var ae *temporal.ApplicationError
		if err == nil || !errors.As(err, &ae) || ae.Type() != api.ContextLengthErrorType || tighter >= maxCompactionsPerCall {
			return resp, err
		}
		j.emit(ctx, Event{Kind: "compact", Text: "the endpoint refused the prompt as too long; compacting and calling again"})
		if n := tokens.WindowInError(ae.Message()); n > 0 && n < j.window() {
			// The endpoint knows its window better than our table.
			j.st.ContextWindow = n
			j.emit(ctx, Event{Kind: "compact", Text: fmt.Sprintf("the endpoint's context window is %d tokens", n)})
		}
		if err := j.compact(ctx, "the endpoint answered context_length_exceeded", tighter+1); err != nil {
			return resp, err
		}
	}
}

func contextWindowOf(in JobInput, worker int) int { return tokens.WindowOf(in, worker) }
