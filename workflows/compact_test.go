package workflows

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/demomodel"
)

// readingModel reads data.txt turns times, then answers; a request without
// tools is a compaction, answered with a summary.
func readingModel(turns int) (demomodel.Handler, *int) {
	var mu sync.Mutex
	calls, summaries := 0, 0
	return func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(req.Tools) == 0 {
			summaries++
			return demomodel.Say(fmt.Sprintf("SUMMARY %d: the agent read data.txt many times; nothing changed.", summaries)), nil
		}
		calls++
		if calls > turns {
			return demomodel.Say("done"), nil
		}
		return demomodel.Calls(call(fmt.Sprintf("r%d", calls), "Read", map[string]any{"file_path": "data.txt"})), nil
	}, &summaries
}

// A 150-turn job whose tool outputs add up to about ten times the model's
// context window completes: it compacts more than once, never sends a prompt
// over the window, and the model always sees the task and the latest turn.
func TestCompactionKeepsALongJobWithinTheWindow(t *testing.T) {
	const window, turns = 6000, 150
	handler, summaries := readingModel(turns)
	h := newHarness(t, handler)
	h.oai.SetContextLimit(window)
	h.input.ContextWindow = window
	h.input.MaxTurns = turns + 5
	h.writeFile("data.txt", strings.Repeat("0123456789abcdef\n", 100)) // 1,700 bytes: ~2,500 as a numbered Read result
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	assert.Equal(t, 0, h.oai.OverLimit(), "no prompt went over the window")
	assert.Greater(t, *summaries, 1, "compacted more than once")

	total := 0
	var last openai.ChatCompletionRequest
	for _, r := range h.oai.Requests() {
		if len(r.Tools) > 0 {
			last = r
			total += len(r.Messages[len(r.Messages)-1].Content)
		}
	}
	assert.Greater(t, total/4, 10*window, "the tool outputs add up to ten windows")
	require.GreaterOrEqual(t, len(last.Messages), 4)
	assert.Equal(t, "test task", last.Messages[1].Content, "the task is always kept")
	assert.Equal(t, api.CompactionName, last.Messages[2].Name)
	assert.Contains(t, last.Messages[2].Content, fmt.Sprintf("SUMMARY %d:", *summaries), "the latest summary")
	tail := last.Messages[len(last.Messages)-2:]
	assert.Equal(t, fmt.Sprintf("r%d", turns), tail[0].ToolCalls[0].ID, "the most recent turn is kept verbatim")
	assert.Equal(t, fmt.Sprintf("r%d", turns), tail[1].ToolCallID, "with its result")
	for _, r := range h.oai.Requests() {
		if len(r.Tools) == 0 {
			continue
		}
		// Tool calls and their results are never split apart.
		for i, m := range r.Messages {
			if m.Role == openai.ChatMessageRoleTool {
				require.NotZero(t, i)
				prev := r.Messages[i-1]
				assert.True(t, prev.Role == openai.ChatMessageRoleAssistant || prev.Role == openai.ChatMessageRoleTool, "a tool result follows its call")
			}
		}
	}
	var compacted int
	for _, r := range h.audit() {
		if r.Event == "compacted" {
			compacted++
		}
	}
	assert.Equal(t, *summaries, compacted, "each compaction is in the audit")
	// The full conversation stays in the transcript.
	assert.Equal(t, 2+2*turns+1+*summaries, strings.Count(h.transcript(), "\n"))
}

// A context_length_exceeded answer makes the job learn the endpoint's window,
// compact and call again, instead of failing.
func TestContextLengthExceededCompactsAndRetries(t *testing.T) {
	handler, summaries := readingModel(30)
	h := newHarness(t, handler)
	h.oai.SetContextLimit(4000)
	h.input.MaxTurns = 40
	h.writeFile("data.txt", strings.Repeat("0123456789abcdef\n", 25))
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	assert.Equal(t, 1, h.oai.OverLimit(), "refused once; from then on the job knows the window")
	assert.GreaterOrEqual(t, *summaries, 1)
	var reasons []string
	for _, r := range h.audit() {
		if r.Event == "compacted" {
			reasons = append(reasons, r.Reason)
		}
	}
	require.NotEmpty(t, reasons)
	assert.Contains(t, reasons[0], "the endpoint answered context_length_exceeded")
}
