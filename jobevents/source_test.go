package jobevents

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/custos-dev/custos/stream"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// The model's reasoning comes as Thought events before the answer's
// text, which still begins its answer (the terminal's "model>" and the
// journal's claim of the streamed answer depend on it); the journal is
// read once, when the turn's first chunk (its reasoning) comes, not on
// every chunk of it.
func TestSourceGivesReasoningApartFromTheText(t *testing.T) {
	hub := stream.NewHub(stream.Limits{})
	reads := 0
	journal := func(context.Context, int) ([]jobapi.Event, error) {
		reads++
		if reads == 1 {
			return []jobapi.Event{{Seq: 1, Turn: 1, Kind: "result", CallID: "c1", Tool: "Read", Text: "ok"}}, nil
		}
		return nil, nil
	}
	src := NewSource(journal, "j", 0, hub)
	defer src.Close()
	w := hub.Begin("j", 4, 1)
	w.Think("First, ")
	var got []Event
	got = append(got, src.Live(context.Background())...)
	w.Think("the tests.")
	got = append(got, src.Live(context.Background())...)
	w.Write("All ")
	got = append(got, src.Live(context.Background())...)
	w.Write("pass.")
	w.End(false)
	got = append(got, src.Live(context.Background())...)
	assert.Equal(t, []Event{
		ToolResult{Seq: 1, Turn: 1, Call: "c1", Tool: "Read", OK: true, Summary: "ok"},
		Thought{Turn: 4, Attempt: 1, Text: "First, "},
		Thought{Turn: 4, Attempt: 1, Text: "the tests."},
		Text{Turn: 4, Attempt: 1, Text: "All ", Begin: true},
		Text{Turn: 4, Attempt: 1, Text: "pass."},
		Text{Turn: 4, Attempt: 1, End: true},
	}, got)
	assert.Equal(t, 1, reads, "the journal read once for the turn")
	_, streamed := src.Streamed("All pass.")
	assert.True(t, streamed, "the answer streamed is the text, not the reasoning")
}
