package jobevents

import (
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"

	"github.com/custos-dev/custos/workflows/jobapi"
)

// A job started without a task (ACP's session/new): its first message is
// in the journal (turn 0) and in the transcript; History shows it once,
// and a message the transcript does not hold yet still shows.
func TestHistoryOfAJobStartedWithoutATask(t *testing.T) {
	msgs := []openai.ChatCompletionMessage{
		{Role: "system", Content: "you are custos"},
		{Role: "user", Content: "hello"},
		{Role: "assistant", Content: "hi there"},
	}
	journal := []jobapi.Event{
		{Seq: 1, Turn: 0, Kind: "message", Text: "ann via acp: hello"},
		{Seq: 2, Turn: 1, Kind: "answer", Text: "hi there"},
		{Seq: 3, Turn: 1, Kind: "message", Text: "ann via acp: and now?"},
	}
	var said []string
	for _, e := range History(msgs, []jobapi.TurnSeq{{Turn: 1, Seq: 3}}, journal) {
		if text, ok := messageText(e); ok {
			said = append(said, text)
		}
	}
	assert.Equal(t, []string{"hello", "and now?"}, said)
}
