package workflows

import (
	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/workflows/compaction"
	"github.com/custos-dev/custos/workflows/tokens"
)

// added accounts for messages appended to the conversation since the last
// model call, for the next call's prompt estimate.
func (j *job) added(msgs ...openai.ChatCompletionMessage) {
	j.st.Pending += api.EstimateTokens(msgs...)
}

// chat is the model call with compaction around it (compaction.Chat).
func (j *job) chat(ctx workflow.Context, call func() (api.ModelResponse, error)) (api.ModelResponse, error) {
	return compaction.Chat(ctx, compaction.Host{
		State: func() *State { return j.st }, CompactAt: j.in.CompactAt, Model: j.in.Model, OnHost: j.onHost,
		Conversation: j.conversation, RunHooks: j.runHooks, Audit: j.audit, Wait: j.waitHost(),
		Say: func(ctx workflow.Context, kind, text string) { j.emit(ctx, Event{Kind: kind, Text: text}) },
	}, call)
}

func contextWindowOf(in JobInput, worker int) int { return tokens.WindowOf(in, worker) }
