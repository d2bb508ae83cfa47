package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/hooks"
)

// Every hook point is wired: a user command hook on each one records that it
// ran, across a job that reads, fails a read, has a call denied, and ends on a
// model error.
func TestEveryHookPointIsWired(t *testing.T) {
	points := []hooks.Point{
		hooks.ToolExecuteBefore, hooks.ToolExecuteAfter, hooks.ToolExecuteError, hooks.ToolExecuteDenied,
		hooks.ToolApprovalPre, hooks.ToolApprovalPost, hooks.LLMRequestBefore, hooks.LLMResponseAfter,
		hooks.LLMResponseError, hooks.SessionSaveBefore, hooks.SessionSaveAfter,
	}
	var groups []string
	for _, p := range points {
		groups = append(groups, fmt.Sprintf(`%q:[{"hooks":[{"type":"command","command":"echo %s >> hook-points.txt"}]}]`, p, p))
	}
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(
			call("ok", "Read", map[string]any{"file_path": "a.txt"}),
			call("missing", "Read", map[string]any{"file_path": "nope.txt"}),
			call("w", "Write", map[string]any{"file_path": "b.txt", "content": "b"}),
		),
		demomodel.Fail(400, "bad request"),
	), withSettings(`{"hooks":{`+strings.Join(groups, ",")+`}}`))
	h.writeFile("a.txt", "alpha")
	h.signalAt(time.Second, "w", "deny")
	_, err := h.run()
	require.Error(t, err, "the job ends on the model's 400")
	seen := map[string]bool{}
	for _, l := range strings.Fields(h.file("hook-points.txt")) {
		seen[l] = true
	}
	var missing []string
	for _, p := range points {
		if !seen[string(p)] {
			missing = append(missing, string(p))
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "hook points that never ran")
}

// A tool.approval.post hook may rewrite what the model sees.
func TestApprovalPostHookRewritesOutput(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("r", "Read", map[string]any{"file_path": "a.txt"})),
		demomodel.Say("read"),
	), withSettings(`{"hooks":{"tool.approval.post":[{"matcher":"Read","hooks":[{"type":"command","command":"cat >/dev/null; echo '{\"modifiedOutput\":\"[redacted]\"}'"}]}]}}`))
	h.writeFile("a.txt", "token=hunter2")
	_, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "[redacted]", h.toolResults()["r"])
}

// A hook that times out or crashes is "no decision", recorded, and the call
// goes on to a person.
func TestBrokenHookIsNoDecision(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("w", "Write", map[string]any{"file_path": "b.txt", "content": "b"})),
		demomodel.Say("done"),
	), withSettings(`{"hooks":{"PreToolUse":[{"matcher":"Write","hooks":[{"type":"command","command":"echo not-json; exit 1"}]}]}}`))
	h.signalAt(time.Second, "w", "allow")
	_, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, approval.LayerHuman, h.decisions()["w"].Layer)
	v, err := h.env.QueryWorkflow(EventsQuery, 0)
	require.NoError(t, err)
	var evs []Event
	require.NoError(t, v.Get(&evs))
	found := false
	for _, e := range evs {
		if e.Kind == "error" && strings.Contains(e.Text, "gave no decision") {
			found = true
		}
	}
	assert.True(t, found, "the broken hook is recorded")
}

// Canceling a job while a call waits denies the call, saves the transcript
// and audit, and ends the workflow as canceled.
func TestCancelWhileWaiting(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("w", "Write", map[string]any{"file_path": "b.txt", "content": "b"})),
		demomodel.Say("never"),
	))
	h.env.RegisterDelayedCallback(func() { h.env.CancelWorkflow() }, 5*time.Second)
	_, err := h.run()
	require.Error(t, err)
	var canceled *temporal.CanceledError
	assert.True(t, errors.As(err, &canceled), "%v", err)
	d := h.decisions()["w"]
	assert.Equal(t, approval.Deny, d.Decision)
	assert.Contains(t, d.Reason, "canceled")
	audit, err := os.ReadFile(h.jobFiles().Audit)
	require.NoError(t, err)
	assert.Contains(t, string(audit), `"callId":"w"`)
	assert.Empty(t, h.file("b.txt"))
}

// The model and session hook points give hooks their data: the request
// (model, message count, tools), the usage, and what a save writes where.
func TestHookPointsReceiveTheirData(t *testing.T) {
	var groups []string
	for _, p := range []hooks.Point{hooks.LLMRequestBefore, hooks.LLMResponseAfter, hooks.SessionSaveBefore, hooks.SessionSaveAfter} {
		groups = append(groups, fmt.Sprintf(`%q:[{"hooks":[{"type":"command","command":"cat >> payloads.jsonl; echo >> payloads.jsonl"}]}]`, p))
	}
	calls := demomodel.Calls(call("r", "Read", map[string]any{"file_path": "a.txt"}))
	calls.Usage = openai.Usage{PromptTokens: 120, CompletionTokens: 7, TotalTokens: 127}
	h := newHarness(t, demomodel.Script(calls, demomodel.Say("done")), withSettings(`{"hooks":{`+strings.Join(groups, ",")+`}}`))
	h.input.Model = "gpt-test"
	h.writeFile("a.txt", "alpha")
	_, err := h.run()
	require.NoError(t, err)
	var got []hooks.Payload
	for _, l := range strings.Split(h.file("payloads.jsonl"), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var p hooks.Payload
		require.NoError(t, json.Unmarshal([]byte(l), &p), l)
		got = append(got, p)
	}
	byPoint := map[hooks.Point][]hooks.Payload{}
	for _, p := range got {
		byPoint[p.Point] = append(byPoint[p.Point], p)
	}
	req := byPoint[hooks.LLMRequestBefore]
	require.Len(t, req, 2, "one per model call")
	assert.Equal(t, &hooks.LLMRequest{Model: "gpt-test", Messages: 2, Tools: []string{"Read", "Glob", "Grep", "LSP", "Write", "Edit", "Bash"}}, req[0].Request)
	assert.Equal(t, 4, req[1].Request.Messages, "system, task, the model's call, the Read result")
	resp := byPoint[hooks.LLMResponseAfter]
	require.Len(t, resp, 2)
	assert.Equal(t, &hooks.LLMUsage{PromptTokens: 120, CompletionTokens: 7, TotalTokens: 127, FinishReason: "tool_calls", ToolCalls: 1}, resp[0].Usage)
	before, after := byPoint[hooks.SessionSaveBefore], byPoint[hooks.SessionSaveAfter]
	require.NotEmpty(t, before)
	require.Equal(t, len(before), len(after))
	first := before[0].Session
	require.NotNil(t, first)
	assert.Equal(t, h.jobFiles().Transcript, first.Transcript)
	assert.Equal(t, h.jobFiles().Audit, first.Audit)
	assert.Equal(t, 2, first.FirstMessage, "the model call stored the system prompt and the task")
	assert.Equal(t, 4, first.LastMessage, "the first save, after turn 1, writes the model's answer and the tool result")
	assert.Equal(t, 0, first.AuditFrom)
	assert.Equal(t, 2, first.AuditTo, "the sandbox backend record and the Read's decision")
	assert.Equal(t, first, after[0].Session)
	last := before[len(before)-1].Session
	assert.Equal(t, 4, last.FirstMessage, "the next save starts where the last ended")
	assert.Equal(t, 5, last.LastMessage)
	_, err = os.Stat(first.Transcript)
	assert.NoError(t, err, "the named transcript exists")
}
