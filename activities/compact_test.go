package activities

import (
	"context"
	"fmt"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
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
	summary := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Name: CompactionName,
		Content: fmt.Sprintf(compactionHeader, 3, 3, 4) + "the summary"}
	stored := Conversation{Workspace: ws, JobID: "j", FirstSeq: 1, Append: append(append([]openai.ChatCompletionMessage(nil), msgs...), summary)}
	require.NoError(t, stored.appendMessages())

	m := NewModel("http://127.0.0.1:1/v1", "k", "m", nil)
	res, err := m.Compact(context.Background(), CompactRequest{
		Conversation: Conversation{Workspace: ws, JobID: "j", Total: len(msgs)}, Window: 100000, KeepTokens: 10,
	})
	require.NoError(t, err)
	require.Equal(t, View{SummarySeq: 5, From: 4}, res.View)
	require.Equal(t, "the summary", res.Summary)
	require.Equal(t, summary, res.Message)
}

// VisibleCount counts what visible sends.
func TestVisibleCount(t *testing.T) {
	msgs := func(total, summary int) []openai.ChatCompletionMessage {
		out := make([]openai.ChatCompletionMessage, total)
		for i := range out {
			out[i] = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: fmt.Sprint(i + 1)}
		}
		if summary > 0 {
			out[summary-1] = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Name: CompactionName}
		}
		return out
	}
	for _, tc := range []struct {
		total int
		v     View
	}{
		{10, View{}},
		{11, View{SummarySeq: 11, From: 7}}, // just compacted: the summary is the last message
		{15, View{SummarySeq: 11, From: 7}}, // turns added since
		{20, View{SummarySeq: 6, From: 9}},  // the summary before the kept part
		{12, View{From: 5}},
	} {
		want := len(tc.v.visible(msgs(tc.total, tc.v.SummarySeq)))
		if got := tc.v.VisibleCount(tc.total); got != want {
			t.Errorf("%d messages, %+v: VisibleCount %d, visible sends %d", tc.total, tc.v, got, want)
		}
	}
}
