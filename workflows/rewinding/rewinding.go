// Package rewinding takes a job's conversation back to the end of an
// earlier turn: the transcript is cut on the workspace's host and the
// job's state follows. It never imports workflows.
package rewinding

import (
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// TurnSeq is the seq of the last answer at or before turn (0: none known).
func TurnSeq(st *jobapi.State, turn int) int {
	seq := 0
	for _, t := range st.TurnSeqs {
		if t.Turn <= turn {
			seq = t.Seq
		}
	}
	return seq
}

// Cut cuts the transcript (conv) on the workspace's host (onHost) after
// turn to's answer and its results, and takes the job's state st there.
func Cut(ctx workflow.Context, onHost func(workflow.Context, workflow.ActivityOptions) workflow.Context,
	conv *api.Conversation, st *jobapi.State, to int) error {
	after := 2 // turn 0: the system prompt and the task
	if to > 0 {
		after = TurnSeq(st, to)
	}
	actx := onHost(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary:             fmt.Sprintf("rewind: cut the conversation at turn %d", to),
	})
	var res api.CutResult
	if err := workflow.ExecuteActivity(actx, api.CutTranscriptActivity,
		api.CutRequest{Conversation: *conv, After: after}).Get(ctx, &res); err != nil {
		return fmt.Errorf("rewind: %w", err)
	}
	cutState(st, to, res)
	return nil
}

// cutState takes the state to the cut conversation.
func cutState(s *jobapi.State, to int, res api.CutResult) {
	s.Messages = []openai.ChatCompletionMessage{res.Last}
	s.MessageBase, s.SavedMessages = res.Total-1, res.Total
	if s.View.SummarySeq > res.Total || s.View.From > res.Total {
		s.View = api.View{} // the compaction is gone with what it summarised
	}
	s.LastPrompt, s.Pending = 0, api.EstimateTokens(res.Last)
	kept := s.TurnSeqs[:0]
	for _, t := range s.TurnSeqs {
		if t.Turn <= to {
			kept = append(kept, t)
		}
	}
	s.TurnSeqs = kept
	s.PendingCalls, s.PendingIDs = nil, nil
	s.LastAnswer = ""
	if res.Last.Role == openai.ChatMessageRoleAssistant {
		s.LastAnswer = res.Last.Content
	}
}
