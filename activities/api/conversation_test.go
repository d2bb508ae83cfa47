package api

import (
	"fmt"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// VisibleCount counts what Visible sends.
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
		want := len(tc.v.Visible(msgs(tc.total, tc.v.SummarySeq)))
		if got := tc.v.VisibleCount(tc.total); got != want {
			t.Errorf("%d messages, %+v: VisibleCount %d, visible sends %d", tc.total, tc.v, got, want)
		}
	}
}
