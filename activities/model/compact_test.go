package model

import (
	"context"
	"fmt"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/transcript"
)

// A retried compaction finds the summary its first attempt stored after the
// conversation and returns it, without asking the model again (the model
// here is unreachable).
func TestCompactRetryReusesStoredSummary(t *testing.T) {
	ws := t.TempDir()
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "sys"},
		{Role: openai.ChatMessageRoleUser, Content: "task"},
		{Role: openai.ChatMessageRoleAssistant, Content: "one"},
		{Role: openai.ChatMessageRoleAssistant, Content: "two"},
	}
	summary := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Name: api.CompactionName,
		Content: fmt.Sprintf(compactionHeader, 3, 3, 4) + "the summary"}
	stored := api.Conversation{Workspace: ws, JobID: "j", FirstSeq: 1, Append: append(append([]openai.ChatCompletionMessage(nil), msgs...), summary)}
	require.NoError(t, transcript.Append(stored))

	m := New("http://127.0.0.1:1/v1", "k", "m", nil)
	res, err := m.Compact(context.Background(), api.CompactRequest{
		Conversation: api.Conversation{Workspace: ws, JobID: "j", Total: len(msgs)}, Window: 100000, KeepTokens: 10,
	})
	require.NoError(t, err)
	require.Equal(t, api.View{SummarySeq: 5, From: 4}, res.View)
	require.Equal(t, "the summary", res.Summary)
	require.Equal(t, summary, res.Message)
}
