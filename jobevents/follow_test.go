package jobevents_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/jobevents"
	"github.com/custos-dev/custos/stream"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Follow gives a job's events on a channel, Job first and Result last,
// with the text relayed from the worker's stream server (found through
// the model call's heartbeat, not the worker's hub), each answer once;
// the endpoint's reasoning_content comes as Thought events before the
// text, never in it.
func TestFollowRelaysTheWorkersText(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := testenv.StartServer(t, devserver.Options{UIPort: -1})
	c := testenv.Dial(t, srv)
	answer := "Streamed from the worker's own listener, in pieces."
	reasoning := "The listing is in; say where the text comes from."
	final := demomodel.Say(answer).Message
	final.ReasoningContent = reasoning
	_, base := testenv.StartModel(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("g1", "Glob", map[string]any{"pattern": "*"})),
		demomodel.Reply{Message: final, ChunkSize: 6, ChunkDelay: 150 * time.Millisecond},
	))
	hub := stream.NewHub(stream.Limits{})
	ss, err := app.StartStreamServer(ctx, hub, func(string) string { return "" }, slog.Default())
	require.NoError(t, err)
	testenv.StartWorkers(t, c, base, app.Options{Stream: hub, StreamServer: ss})
	ws := testenv.Workspace(t)
	run := testenv.StartJob(t, c, "follow-relay", jobapi.JobInput{Once: true, Task: "list, then answer", Workspace: ws})

	var evs []jobevents.Event
	var text, thought strings.Builder
	for e := range jobevents.Follow(ctx, c, run.GetID(), jobevents.Options{Poll: 50 * time.Millisecond}) {
		evs = append(evs, e)
		switch e := e.(type) {
		case jobevents.Text:
			text.WriteString(e.Text)
		case jobevents.Thought:
			assert.Empty(t, text.String(), "the reasoning comes before the text")
			thought.WriteString(e.Text)
		}
	}
	require.NotEmpty(t, evs)
	assert.Equal(t, jobevents.Job{Job: run.GetID(), Workspace: ws}, evs[0])
	res, ok := evs[len(evs)-1].(jobevents.Result)
	require.True(t, ok, "last: %T", evs[len(evs)-1])
	assert.Equal(t, jobevents.StatusDone, res.Status)
	assert.Equal(t, answer, res.Answer)
	assert.Equal(t, answer, text.String(), "the answer's text came from the worker's listener")
	assert.Equal(t, reasoning, thought.String(), "the reasoning came from the worker's listener, apart")
	var answers, calls, results int
	for _, e := range evs {
		switch e := e.(type) {
		case jobevents.Answer:
			answers++
			assert.True(t, e.Streamed, "the answer is marked as streamed")
		case jobevents.ToolCall:
			calls++
			assert.JSONEq(t, `{"pattern":"*"}`, string(e.Input))
		case jobevents.ToolResult:
			results++
			assert.True(t, e.OK)
		}
	}
	assert.Equal(t, 1, answers, "the answer once")
	assert.Equal(t, 1, calls)
	assert.Equal(t, 1, results)
}
