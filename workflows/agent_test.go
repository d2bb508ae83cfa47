package workflows

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
)

func TestReadOnlyCallRunsWithoutSignal(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("c1", "Read", map[string]any{"file_path": "hello.txt"})),
		demomodel.Say("it says hi"),
	))
	h.writeFile("hello.txt", "hi there\n")
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "it says hi", res.Answer)
	assert.Contains(t, h.toolResults()["c1"], "hi there")
	d := h.decisions()["c1"]
	assert.Equal(t, approval.Allow, d.Decision)
	assert.Equal(t, approval.LayerReadOnly, d.Layer)
	assert.Zero(t, d.WaitMillis)
}

func TestWriteWaitsForAllowThenRuns(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("w1", "Write", map[string]any{"file_path": "out.txt", "content": "written"})),
		demomodel.Say("done"),
	))
	// Before the signal the call is pending and the file untouched.
	h.env.RegisterDelayedCallback(func() {
		st := h.status()
		require.Len(t, st.Pending, 1)
		assert.Equal(t, "w1", st.Pending[0].CallID)
		assert.Equal(t, "waiting", st.State)
		assert.Empty(t, h.file("out.txt"))
	}, 10*time.Second)
	h.signalAt(20*time.Second, "w1", "allow")
	_, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "written", h.file("out.txt"))
	d := h.decisions()["w1"]
	assert.Equal(t, approval.Allow, d.Decision)
	assert.Equal(t, approval.LayerHuman, d.Layer)
	assert.Equal(t, "test", d.Approver)
	assert.GreaterOrEqual(t, d.WaitMillis, int64(20000))
}

func TestDenyReturnsStructuredDenialToModel(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("w1", "Write", map[string]any{"file_path": "out.txt", "content": "x"})),
		demomodel.Say("ok, not writing"),
	))
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(ApprovalSignal, ApprovalDecision{CallID: "w1", Decision: "deny", Reason: "not now", By: "test"})
	}, time.Second)
	res, err := h.run()
	require.NoError(t, err, "a denial must not fail the job")
	assert.Equal(t, "ok, not writing", res.Answer)
	d, ok := denial(h.toolResults()["w1"])
	require.True(t, ok, "tool result is a structured denial: %s", h.toolResults()["w1"])
	assert.Equal(t, "deny", d.Decision)
	assert.Equal(t, "human", d.Layer)
	assert.Equal(t, "not now", d.Reason)
	assert.Empty(t, h.file("out.txt"))
}

func TestNoAnswerWithinTimeoutDenies(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("w1", "Write", map[string]any{"file_path": "out.txt", "content": "x"})),
		demomodel.Say("gave up"),
	))
	// A signal after the deadline is too late and is recorded as ignored.
	h.signalAt(61*time.Second, "w1", "allow")
	start := h.env.Now()
	_, err := h.run()
	require.NoError(t, err)
	d, ok := denial(h.toolResults()["w1"])
	require.True(t, ok)
	assert.Equal(t, "human", d.Layer)
	assert.Contains(t, d.Reason, "no answer within 1m0s")
	assert.Empty(t, h.file("out.txt"))
	assert.GreaterOrEqual(t, h.env.Now().Sub(start), 60*time.Second)
}

func TestApprovalTimeoutIsPerJob(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("w1", "Write", map[string]any{"file_path": "out.txt", "content": "x"})),
		demomodel.Say("gave up"),
	))
	h.input.ApprovalTimeout = 5 * time.Second
	_, err := h.run()
	require.NoError(t, err)
	d, _ := denial(h.toolResults()["w1"])
	assert.Contains(t, d.Reason, "no answer within 5s")
	assert.Equal(t, int64(5000), h.decisions()["w1"].WaitMillis)
}

func TestParallelCallsDecidedIndependently(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(
			call("a", "Write", map[string]any{"file_path": "a.txt", "content": "A"}),
			call("b", "Write", map[string]any{"file_path": "b.txt", "content": "B"}),
			call("c", "Read", map[string]any{"file_path": "seed.txt"}),
		),
		demomodel.Say("done"),
	))
	h.writeFile("seed.txt", "seed")
	// b is denied first; a is still pending and is allowed later.
	h.signalAt(time.Second, "b", "deny")
	h.signalAt(5*time.Second, "a", "allow")
	_, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "A", h.file("a.txt"))
	assert.Empty(t, h.file("b.txt"))
	dec := h.decisions()
	assert.Equal(t, approval.Allow, dec["a"].Decision)
	assert.Equal(t, approval.Deny, dec["b"].Decision)
	assert.Equal(t, approval.LayerReadOnly, dec["c"].Layer)
	assert.Contains(t, h.toolResults()["c"], "seed")
}

func TestBashRunsSeriallyInCallOrder(t *testing.T) {
	// If these ran in parallel, the shorter sleeps would append first.
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(
			call("b1", "Bash", map[string]any{"command": "sleep 0.6; echo one >> order.txt"}),
			call("b2", "Bash", map[string]any{"command": "sleep 0.3; echo two >> order.txt"}),
			call("b3", "Bash", map[string]any{"command": "echo three >> order.txt"}),
		),
		demomodel.Say("done"),
	))
	h.input.Mode = approval.ModeBypass
	_, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\nthree\n", h.file("order.txt"))
}

func TestUnknownAndDuplicateSignalsIgnored(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("w1", "Write", map[string]any{"file_path": "out.txt", "content": "x"})),
		demomodel.Say("done"),
	))
	h.signalAt(time.Second, "nope", "allow")
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(ApprovalSignal, map[string]any{"callId": "w1", "decision": "maybe"})
		h.env.SignalWorkflow(ApprovalSignal, "not even an object")
	}, 2*time.Second)
	h.signalAt(3*time.Second, "w1", "allow")
	h.signalAt(3*time.Second, "w1", "deny") // duplicate: the first decision won
	_, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "x", h.file("out.txt"))
	var ignored []string
	for _, r := range h.audit() {
		if r.Event == "signal-ignored" {
			ignored = append(ignored, r.CallID+": "+r.Reason)
		}
	}
	require.Len(t, ignored, 4, "%v", ignored)
	assert.Equal(t, `nope: no call "nope" is waiting for approval in this job`, ignored[0])
	assert.Equal(t, `w1: decision "maybe" is not allow, deny, always or never`, ignored[1])
	assert.Contains(t, ignored[2], ": malformed approval signal: json: cannot unmarshal string")
	assert.Regexp(t, `^w1: already allowed by test via temporal at \d\d:\d\d:\d\d UTC$`, ignored[3])
	assert.Equal(t, approval.Allow, h.decisions()["w1"].Decision)
}

func TestModelRateLimitRetried(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Fail(429, "slow down"),
		demomodel.Fail(503, "overloaded"),
		demomodel.Say("finally"),
	))
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "finally", res.Answer)
	assert.Len(t, h.oai.Requests(), 3)
	assert.Equal(t, 1, res.Usage.ModelCalls)
}

func TestModelBadRequestNotRetried(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Fail(400, "bad request: context too long"),
		demomodel.Say("never reached"),
	))
	_, err := h.run()
	require.Error(t, err)
	var actErr *temporal.ActivityError
	require.True(t, errors.As(err, &actErr), "%v", err)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(actErr, &appErr), "%v", err)
	assert.True(t, appErr.NonRetryable())
	assert.Equal(t, api.ModelRequestErrorType, appErr.Type())
	assert.Contains(t, err.Error(), "context too long")
	assert.Len(t, h.oai.Requests(), 1, "a 400 is not retried")
}

func TestUnknownToolAndMalformedArgumentsAreResults(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(
			rawCall("u1", "Teleport", `{"to":"mars"}`),
			rawCall("m1", "Read", `{"file_path": `),
		),
		demomodel.Say("adapted"),
	))
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "adapted", res.Answer)
	r := h.toolResults()
	// The exact denials, written by hand: fail closed at layer 1, saying
	// what went wrong and what would be required.
	assert.JSONEq(t, `{"approved":false,"decision":"deny","layer":"rules","risk":"exec",
		"reason":"unknown tool \"Teleport\"; the tools are Read, Glob, Grep, LSP, Write, Edit and Bash",
		"required":"nothing: there is no such tool"}`, r["u1"])
	assert.JSONEq(t, `{"approved":false,"decision":"deny","layer":"rules","risk":"read",
		"reason":"invalid arguments for Read: the arguments must be a JSON object with Read's parameters (file_path, offset, limit); nobody was asked and nothing ran",
		"required":"valid arguments: a JSON object with the tool's parameters"}`, r["m1"])
}

func TestContinueAsNewCarriesPendingState(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("w1", "Write", map[string]any{"file_path": "out.txt", "content": "x"})),
	))
	h.input.ContinueAsNewEvery = 1
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(ModeSignal, ModeChange{Mode: "acceptEdits", By: "test"})
	}, 0)
	h.env.ExecuteWorkflow(WorkflowName, h.input)
	require.True(t, h.env.IsWorkflowCompleted())
	err := h.env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(err, &can), "want continue-as-new, got %v", err)
	var next JobInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.State)
	st := next.State
	require.Len(t, st.PendingCalls, 1, "the model's calls travel to the next run")
	assert.Equal(t, "w1", st.PendingCalls[0].ID)
	assert.Equal(t, 1, st.Turn)
	assert.Equal(t, approval.ModeAcceptEdits, st.Mode, "a signal drained before continuing is not lost")
	// The conversation is in the transcript; only what it may not hold yet
	// travels: the model's answer (system prompt and task were stored by
	// the model call).
	assert.Equal(t, 3, st.Total())
	assert.Equal(t, 2, st.MessageBase)
	require.Len(t, st.Messages, 1)
	assert.Equal(t, "w1", st.Messages[0].ToolCalls[0].ID)
	assert.Empty(t, h.file("out.txt"), "the call has not run yet")

	// The next run picks the pending call up and runs it (acceptEdits
	// allows), on the same workspace and transcript (the files the job
	// carries, in the first harness's state directory).
	h2 := newHarness(t, demomodel.Script(demomodel.Say("finished after continue-as-new")))
	assert.Equal(t, h.jobFiles(), st.Files, "the job carries where its files are")
	next.Workspace = h2.ws
	next.State.Env.Workspace = h2.ws
	next.ContinueAsNewEvery = 0
	h2.input = next
	res, err := h2.run()
	require.NoError(t, err)
	assert.Equal(t, "finished after continue-as-new", res.Answer)
	assert.Equal(t, "x", h2.file("out.txt"))
	assert.Equal(t, approval.LayerMode, h2.decisions()["w1"].Layer)
	reqs := h2.oai.Requests()
	require.Len(t, reqs, 1)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Equal(t, "w1", last.ToolCallID)
	assert.False(t, strings.HasPrefix(last.Content, "{\"approved\":false"), last.Content)
}

func TestTurnLimitStopsTheJob(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("r1", "Glob", map[string]any{"pattern": "*"})),
		demomodel.Calls(call("r2", "Glob", map[string]any{"pattern": "*"})),
		demomodel.Calls(call("r3", "Glob", map[string]any{"pattern": "*"})),
	))
	h.input.MaxTurns = 2
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "max turns", res.Reason)
	assert.Equal(t, 2, res.Turns)
	assert.Contains(t, res.Answer, "turn limit (2)")
	assert.Len(t, h.oai.Requests(), 2)
}

func TestDuplicateAndMissingCallIDsAreMadeUnique(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(
			rawCall("same", "Write", `{"file_path":"a.txt","content":"a"}`),
			rawCall("same", "Write", `{"file_path":"b.txt","content":"b"}`),
		),
		demomodel.Say("done"),
	))
	h.signalAt(time.Second, "same", "allow")
	h.signalAt(2*time.Second, "same_2", "deny")
	_, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "a", h.file("a.txt"))
	assert.Empty(t, h.file("b.txt"), "the second call answers to its own ID")
	r := h.toolResults()
	assert.Contains(t, r, "same")
	assert.Contains(t, r, "same_2")
}

// The Web UI's "Current details" name each pending call and the exact signal.
func TestCurrentDetailsShowPendingApproval(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("b1", "Bash", map[string]any{"command": "ls *_test.go"})),
		demomodel.Say("done"),
	))
	var details, after string
	h.env.RegisterDelayedCallback(func() {
		details = h.currentDetails()
		h.env.SignalWorkflow(ApprovalSignal, ApprovalDecision{CallID: "b1", Decision: "deny", By: "test"})
	}, 5*time.Second)
	_, err := h.run()
	require.NoError(t, err)
	after = h.currentDetails()
	assert.Contains(t, details, "Waiting for approval (1)")
	assert.Contains(t, details, "**Bash `ls *_test.go`**", "the command is a code span, not markdown")
	assert.Contains(t, details, "~~~~~~\nCommands:\n  ls *_test.go\nSandbox: writable: the workspace "+h.ws, "the preview")
	assert.Contains(t, details, "Answer with Update `decide` (tells you whether it counted) or Signal `approval`, input `{\"callId\":\"b1\",\"decision\":\"allow\",\"by\":\"web-ui\",\"channel\":\"web-ui\"}`")
	// Once decided, the call is no longer shown as pending but as decided.
	assert.Contains(t, after, "done\n\nNo approval pending.")
	assert.NotContains(t, after, "Waiting for approval")
	assert.Regexp(t, "### Recently decided\n\n- `b1` `Bash: ls \\*_test.go` — denied by test via temporal at \\d\\d:\\d\\d:\\d\\d UTC\n", after)
}

// A broken settings file stops the job at its start with the file's name,
// before any model call: never an empty policy.
func TestBrokenSettingsFailTheJobAtStart(t *testing.T) {
	h := newHarness(t, demomodel.Script(demomodel.Say("never asked")),
		withSettings(`{"permissions":{"allow":["Bash(npm test"]}}`))
	_, err := h.run()
	require.Error(t, err)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	assert.Equal(t, "SettingsError", appErr.Type())
	assert.Contains(t, err.Error(), "settings.json")
	assert.Empty(t, h.oai.Requests(), "no model call with a broken policy")
}
