package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/demomodel"
)

// A call to a server that answers nothing any more is ended by the
// server's callTimeout: the model is told it timed out and may or may not
// have taken effect, and the next call gets a fresh server.
func TestMCPCallTimeoutEndsACallThatNeverAnswers(t *testing.T) {
	h := mcpHarness(t, demomodel.Script(
		demomodel.Calls(call("f", "mcp__t__freeze", map[string]any{})),
		demomodel.Calls(call("e", "mcp__t__echo", map[string]any{"text": "after"})),
		demomodel.Say("done"),
	), map[string]any{"callTimeout": "2s"}, map[string]any{"permissions": map[string]any{"allow": []string{"mcp__t"}}})
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	got := h.toolResults()
	assert.Contains(t, got["f"], "no answer within 2s")
	assert.Contains(t, got["f"], "may or may not have taken effect")
	assert.Equal(t, "echo: after", got["e"], "a fresh server answers the next call")
}

// An interrupt while an MCP call waits on a server that answers nothing
// any more: the call is stopped, its result says so, the model gets the
// interrupt's text at once, and the next call gets a fresh server.
func TestMCPInterruptStopsACallThatNeverAnswers(t *testing.T) {
	h := conversing(mcpHarness(t, demomodel.Script(
		demomodel.Calls(call("f", "mcp__t__freeze", map[string]any{})),
		demomodel.Calls(call("e", "mcp__t__echo", map[string]any{"text": "after"})),
		demomodel.Say("done"),
	), nil, map[string]any{"permissions": map[string]any{"allow": []string{"mcp__t"}}}))
	stop := h.updateAt(3*time.Second, InterruptUpdate, Interrupt{Text: "stop that", By: "alice"})
	h.updateAt(time.Hour, EndUpdate, End{})
	res, err := h.run()
	require.NoError(t, err)
	require.NoError(t, stop.err)
	assert.Equal(t, []string{"mcp__t__freeze f"}, stop.stop.Stopped)
	assert.Equal(t, "done", res.Answer)
	got := h.toolResults()
	assert.Contains(t, got["f"], "interrupted by alice")
	assert.Contains(t, got["f"], "stopped before the server \"t\" answered")
	assert.Contains(t, got["f"], "may or may not have taken effect")
	reqs := h.oai.Requests()
	require.GreaterOrEqual(t, len(reqs), 2)
	second := reqs[1].Messages
	assert.Equal(t, "stop that", second[len(second)-1].Content, "the model gets the text at once")
	assert.Equal(t, "echo: after", got["e"], "a fresh server answers the next call")
}
