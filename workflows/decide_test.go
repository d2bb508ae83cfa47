package workflows

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
)

// updateOutcome is what the sender of one Update learned.
type updateOutcome struct {
	accepted bool
	rejected error
	result   DecideResult
	mode     ModeResult
	grant    Grant
	message  MessageResult
	stop     InterruptResult
	end      EndResult
	budget   BudgetStatus
	call     UserCallResult
	err      error
	done     bool
}

// updateAt sends an Update after d of workflow time and records its outcome.
func (h *harness) updateAt(d time.Duration, name string, arg any) *updateOutcome {
	o := &updateOutcome{}
	h.env.RegisterDelayedCallback(func() { h.update(name, arg, o) }, d)
	return o
}

var updateSeq int

func (h *harness) update(name string, arg any, o *updateOutcome) {
	updateSeq++
	h.env.UpdateWorkflow(name, fmt.Sprintf("u%d", updateSeq), &testsuite.TestUpdateCallback{
		OnAccept: func() { o.accepted = true },
		OnReject: func(err error) { o.rejected = err },
		OnComplete: func(v any, err error) {
			o.done, o.err = true, err
			switch r := v.(type) {
			case DecideResult:
				o.result = r
			case ModeResult:
				o.mode = r
			case Grant:
				o.grant = r
			case MessageResult:
				o.message = r
			case InterruptResult:
				o.stop = r
			case EndResult:
				o.end = r
			case BudgetStatus:
				o.budget = r
			case UserCallResult:
				o.call = r
			}
		},
	}, arg)
}

func writeCall(id string) demomodel.Handler {
	return demomodel.Script(
		demomodel.Calls(call(id, "Write", map[string]any{"file_path": "out.txt", "content": "x"})),
		demomodel.Say("done"),
	)
}

// TestDecideUpdateAccepted: an answer through the Update runs the call and
// tells its sender the final decision record.
func TestDecideUpdateAccepted(t *testing.T) {
	h := newHarness(t, writeCall("w1"))
	o := h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "allow", By: "alice", Channel: "cli"})
	_, err := h.run()
	require.NoError(t, err)
	require.True(t, o.accepted, "update rejected: %v", o.rejected)
	require.True(t, o.done)
	require.NoError(t, o.err)
	assert.Equal(t, DecideResult{CallID: "w1", Tool: "Write", Summary: "Write out.txt", Decision: approval.Allow,
		Answer: "allow", Layer: approval.LayerHuman, By: "alice", Channel: "cli", At: o.result.At}, o.result)
	assert.Equal(t, "x", h.file("out.txt"))
	rec := h.decisions()["w1"]
	assert.Equal(t, "alice", rec.Approver)
	assert.Equal(t, "cli", rec.Channel)
}

// TestDecideAlwaysReturnsLearnedRule: the sender learns which rule the
// answer added.
func TestDecideAlwaysReturnsLearnedRule(t *testing.T) {
	h := newHarness(t, writeCall("w1"))
	o := h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "always", By: "alice"})
	_, err := h.run()
	require.NoError(t, err)
	require.NoError(t, o.err)
	assert.Equal(t, approval.Allow, o.result.Decision)
	assert.Equal(t, "always", o.result.Answer)
	assert.Equal(t, "Write(out.txt)", o.result.Rule)
	assert.Equal(t, "temporal", o.result.Channel, "an answer without a channel came through Temporal")
}

// TestDecideUpdateRejected: each answer that would not count is refused to
// its sender by the validator, and leaves nothing in the job's audit.
func TestDecideUpdateRejected(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("w1", "Write", map[string]any{"file_path": "a.txt", "content": "a"})),
		demomodel.Calls(call("w2", "Write", map[string]any{"file_path": "b.txt", "content": "b"})),
		demomodel.Calls(call("w3", "Write", map[string]any{"file_path": "c.txt", "content": "c"})),
		demomodel.Say("done"),
	))
	h.input.ApprovalTimeout = time.Minute
	unknown := h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "nope", Decision: "allow"})
	badDecision := h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "maybe"})
	noCall := h.updateAt(time.Second, DecideUpdate, ApprovalDecision{Decision: "allow"})
	first := h.updateAt(2*time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "allow", By: "alice", Channel: "cli"})
	again := h.updateAt(3*time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "deny", By: "bob", Channel: "slack"})
	// w2 is never answered: its timer denies it, and a late answer (sent
	// while w3 waits, so the job still runs) is told so.
	late := h.updateAt(90*time.Second, DecideUpdate, ApprovalDecision{CallID: "w2", Decision: "allow", By: "carol"})
	h.signalAt(100*time.Second, "w3", "allow")
	_, err := h.run()
	require.NoError(t, err)

	for name, o := range map[string]*updateOutcome{"unknown": unknown, "bad decision": badDecision, "no call": noCall, "again": again, "late": late} {
		assert.False(t, o.accepted, "%s was accepted", name)
		require.Error(t, o.rejected, name)
	}
	assert.Contains(t, unknown.rejected.Error(), `not applied: no call "nope" is waiting for approval in this job`)
	assert.Contains(t, badDecision.rejected.Error(), `not applied: decision "maybe" is not allow, deny, always or never`)
	assert.Contains(t, noCall.rejected.Error(), `not applied: callId is missing`)
	assert.Regexp(t, `not applied: already allowed by alice via cli at \d\d:\d\d:\d\d UTC`, again.rejected.Error())
	assert.Regexp(t, `not applied: already denied by the 1m0s timer at \d\d:\d\d:\d\d UTC`, late.rejected.Error())

	require.NoError(t, first.err)
	assert.Equal(t, approval.Allow, first.result.Decision)
	assert.Equal(t, "a", h.file("a.txt"))
	assert.Equal(t, "", h.file("b.txt"))
	for _, r := range h.audit() {
		assert.NotEqual(t, "signal-ignored", r.Event, "a rejected Update left a record: %+v", r)
		assert.NotEqual(t, "bob", r.Approver)
		assert.NotEqual(t, "carol", r.Approver)
	}
	assert.Equal(t, "timeout", h.decisions()["w2"].Approver)
}

// TestFirstAnswerWinsAcrossChannels: a signal and an Update for one call,
// in both orders; the first counts, the second is told what happened.
func TestFirstAnswerWinsAcrossChannels(t *testing.T) {
	t.Run("signal first", func(t *testing.T) {
		h := newHarness(t, writeCall("w1"))
		var o updateOutcome
		h.env.RegisterDelayedCallback(func() {
			h.env.SignalWorkflow(ApprovalSignal, ApprovalDecision{CallID: "w1", Decision: "deny", By: "web", Channel: "web-ui"})
			h.update(DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "allow", By: "alice", Channel: "slack"}, &o)
		}, time.Second)
		_, err := h.run()
		require.NoError(t, err)
		assert.Equal(t, approval.Deny, h.decisions()["w1"].Decision)
		assert.Equal(t, "web", h.decisions()["w1"].Approver)
		assert.Equal(t, "", h.file("out.txt"))
		failure := o.rejected
		if failure == nil {
			failure = o.err // validated before the signal was applied: the handler says so
		}
		require.Error(t, failure)
		assert.Regexp(t, `not applied: already (answered deny by web via web-ui|denied by web via web-ui at)`, failure.Error())
	})
	t.Run("update first", func(t *testing.T) {
		h := newHarness(t, writeCall("w1"))
		var o updateOutcome
		h.env.RegisterDelayedCallback(func() {
			h.update(DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "allow", By: "alice", Channel: "slack"}, &o)
		}, time.Second)
		h.env.RegisterDelayedCallback(func() {
			h.env.SignalWorkflow(ApprovalSignal, ApprovalDecision{CallID: "w1", Decision: "deny", By: "web", Channel: "web-ui"})
		}, time.Second+time.Millisecond)
		_, err := h.run()
		require.NoError(t, err)
		require.NoError(t, o.err)
		assert.Equal(t, approval.Allow, o.result.Decision)
		assert.Equal(t, "x", h.file("out.txt"))
		var ignored []string
		for _, r := range h.audit() {
			if r.Event == "signal-ignored" {
				ignored = append(ignored, r.Reason)
			}
		}
		require.Len(t, ignored, 1)
		assert.Regexp(t, `^already (answered allow by alice via slack|allowed by alice via slack at)`, ignored[0])
	})
}

// TestRefusedAnswerIsAuditedAndCallKeepsWaiting: a channel that refuses a
// person's answer (not an approver) gets an error; the refusal is in the
// audit and an approver can still answer.
func TestRefusedAnswerIsAuditedAndCallKeepsWaiting(t *testing.T) {
	h := newHarness(t, writeCall("w1"))
	refused := h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "allow", By: "U999", Channel: "slack", Refused: "not in SLACK_APPROVERS"})
	ok := h.updateAt(2*time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "allow", By: "U001", Channel: "slack"})
	_, err := h.run()
	require.NoError(t, err)
	require.True(t, refused.accepted, "a refusal must be recorded, so the validator lets it in")
	require.Error(t, refused.err)
	assert.Contains(t, refused.err.Error(), "refused: U999 via slack may not answer w1: not in SLACK_APPROVERS")
	require.NoError(t, ok.err)
	assert.Equal(t, "U001", ok.result.By)
	assert.Equal(t, "x", h.file("out.txt"))
	var refusals []approval.AuditRecord
	for _, r := range h.audit() {
		if r.Event == "answer-refused" {
			refusals = append(refusals, r)
		}
	}
	require.Len(t, refusals, 1)
	assert.Equal(t, "U999", refusals[0].Approver)
	assert.Equal(t, "slack", refusals[0].Channel)
	assert.Equal(t, "not in SLACK_APPROVERS", refusals[0].Reason)
	assert.Equal(t, approval.Decision("allow"), refusals[0].Decision)
}

// TestModeUpdate: the mode Update validates like the signal, answers with
// the change, and records refusals without changing the mode.
func TestModeUpdate(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("w1", "Write", map[string]any{"file_path": "a.txt", "content": "a"})),
		demomodel.Calls(call("w2", "Write", map[string]any{"file_path": "b.txt", "content": "b"})),
		demomodel.Say("done"),
	))
	h.signalAt(3*time.Second, "w1", "allow")
	bad := h.updateAt(time.Second, ModeUpdate, ModeChange{Mode: "yolo"})
	refused := h.updateAt(time.Second, ModeUpdate, ModeChange{Mode: "bypass", By: "U999", Channel: "slack", Refused: "not in SLACK_APPROVERS"})
	var stillDefault approval.Mode
	h.env.RegisterDelayedCallback(func() {
		st := h.status()
		stillDefault = st.Mode
	}, 1500*time.Millisecond)
	ok := h.updateAt(2*time.Second, ModeUpdate, ModeChange{Mode: "acceptEdits", By: "U001", Channel: "slack"})
	_, err := h.run()
	require.NoError(t, err)
	require.Error(t, bad.rejected)
	assert.Contains(t, bad.rejected.Error(), "not applied: ")
	assert.Contains(t, bad.rejected.Error(), `"yolo"`)
	require.Error(t, refused.err)
	assert.Contains(t, refused.err.Error(), "refused: U999 via slack may not switch the job to bypass: not in SLACK_APPROVERS")
	assert.Equal(t, approval.ModeDefault, stillDefault)
	require.NoError(t, ok.err)
	assert.Equal(t, ModeResult{Old: approval.ModeDefault, New: approval.ModeAcceptEdits, By: "U001"}, ok.mode)
	// w1 was asked before the change; acceptEdits allowed w2 without asking.
	assert.Equal(t, approval.LayerHuman, h.decisions()["w1"].Layer)
	assert.Equal(t, approval.LayerMode, h.decisions()["w2"].Layer)
	assert.Equal(t, "b", h.file("b.txt"))
	var events []string
	for _, r := range h.audit() {
		if r.Event == "mode-changed" || r.Event == "mode-refused" {
			events = append(events, r.Event+" "+r.Approver+" "+r.Channel+": "+r.Reason)
		}
	}
	assert.Equal(t, []string{
		"mode-refused U999 slack: default -> bypass: not in SLACK_APPROVERS",
		"mode-changed U001 slack: default -> acceptEdits",
	}, events)
}
