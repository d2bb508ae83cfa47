package workflows

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/answerkey"
)

// quorumSettings: writes under deploy/ need two of alice, bob and the ops
// group; acceptEdits would otherwise let them run unasked.
const quorumSettings = `{
  "permissions": {"deny": ["Write(deploy/secret*)"]},
  "approvals": [{"rule": "Write(deploy/**)", "require": 2, "from": ["U0ALICE", "U0BOB", "S0OPS"]}]
}`

// vouch is what the Slack endpoint sends: the person's identity, signed
// with the workers' key (the one in the harness's state directory).
func (h *harness) vouch(call, decision, id string, groups ...string) ApprovalDecision {
	h.t.Helper()
	key, err := answerkey.Load(func(string) string { return "" }, h.stateDir)
	require.NoError(h.t, err)
	sig, err := answerkey.Sign(key, answerkey.Claim{Job: "default-test-workflow-id", Call: call, Decision: decision, Channel: "slack", ID: id, Groups: groups})
	require.NoError(h.t, err)
	return ApprovalDecision{CallID: call, Decision: decision, By: id, Channel: "slack", Verified: &VerifiedIdentity{ID: id, Groups: groups, Sig: sig}}
}

func quorumHarness(t *testing.T, script demomodel.Handler) *harness {
	h := newHarness(t, script, withSettings(quorumSettings))
	h.input.Mode = approval.ModeAcceptEdits
	h.input.Owner = []string{"U0OWNER"}
	h.input.ApprovalTimeout = 10 * time.Minute
	return h
}

// TestQuorumTwoApprovers: a covered call waits though acceptEdits would
// run it; unverified, self-, repeated, forged and Always answers do not
// count; the second approver's allow runs it; the audit keeps each vote.
func TestQuorumTwoApprovers(t *testing.T) {
	h := quorumHarness(t, writeCallAt("q1", "deploy/prod.yaml"))
	cli := h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "q1", Decision: "allow", By: "alice", Channel: "cli"})
	self := h.updateAt(2*time.Second, DecideUpdate, h.vouch("q1", "allow", "U0OWNER"))
	first := h.updateAt(3*time.Second, DecideUpdate, h.vouch("q1", "allow", "U0ALICE"))
	again := h.updateAt(4*time.Second, DecideUpdate, h.vouch("q1", "allow", "U0ALICE"))
	forged := h.vouch("q1", "allow", "U0MALLORY", "S0OPS")
	forged.Verified.Sig = forged.Verified.Sig[:10] + "AAAA" + forged.Verified.Sig[14:]
	forgery := h.updateAt(5*time.Second, DecideUpdate, forged)
	stranger := h.updateAt(6*time.Second, DecideUpdate, h.vouch("q1", "allow", "U0EVE", "S0DEV"))
	always := h.updateAt(7*time.Second, DecideUpdate, h.vouch("q1", "always", "U0BOB"))
	var waiting Status
	var details string
	h.env.RegisterDelayedCallback(func() { waiting, details = h.status(), h.currentDetails() }, 8*time.Second)
	second := h.updateAt(9*time.Second, DecideUpdate, h.vouch("q1", "allow", "U0CAROL", "S0OPS"))
	_, err := h.run()
	require.NoError(t, err)

	for name, o := range map[string]*updateOutcome{"cli": cli, "self": self, "again": again, "stranger": stranger, "always": always} {
		assert.False(t, o.accepted, "%s must be refused before history", name)
	}
	assert.ErrorContains(t, cli.rejected, "verified by a channel")
	assert.ErrorContains(t, self.rejected, "whom this job is for")
	assert.ErrorContains(t, again.rejected, "U0ALICE already approved")
	assert.ErrorContains(t, stranger.rejected, "not among those who may approve")
	assert.ErrorContains(t, always.rejected, "answer allow or deny")
	require.True(t, forgery.accepted, "a forgery is structurally fine; its signature fails in the handler")
	assert.ErrorContains(t, forgery.err, "does not verify")

	require.NoError(t, first.err)
	assert.Equal(t, "vote", first.result.Answer)
	assert.Equal(t, "1 more from U0ALICE, U0BOB, S0OPS", first.result.Needed)
	require.Len(t, waiting.Pending, 1)
	assert.Equal(t, []string{"U0ALICE"}, waiting.Pending[0].Quorum[0].Approved)
	assert.Contains(t, waiting.Pending[0].Reason, "needs approval by 2 of U0ALICE, U0BOB, S0OPS")
	// The Web UI offers only what an answer from it can do: deny.
	assert.Contains(t, details, "Approvals count only from verified people")
	assert.Contains(t, details, `"decision":"deny"`)
	assert.NotContains(t, details, "`always` or `never`")
	assert.NotContains(t, details, `"grant"`)

	require.NoError(t, second.err)
	assert.Equal(t, approval.Allow, second.result.Decision)
	assert.Equal(t, []string{"U0ALICE", "U0CAROL"}, second.result.Votes)
	assert.Equal(t, "x", h.file("deploy/prod.yaml"))
	rec := h.decisions()["q1"]
	assert.Equal(t, approval.LayerHuman, rec.Layer)
	assert.Equal(t, "U0ALICE + U0CAROL", rec.Approver)
	var votes, refused []string
	for _, r := range h.audit() {
		switch r.Event {
		case "approval-vote":
			votes = append(votes, r.Approver)
		case "answer-refused":
			refused = append(refused, r.Approver)
		}
	}
	assert.Equal(t, []string{"U0ALICE", "U0CAROL"}, votes)
	assert.Equal(t, []string{"U0MALLORY"}, refused)
}

// TestQuorumEnds: any one deny denies (from any channel), the deadline
// denies, a deny rule denies without asking, and a signal's allow does
// not count.
func TestQuorumEnds(t *testing.T) {
	t.Run("a deny after one approval", func(t *testing.T) {
		h := quorumHarness(t, writeCallAt("q1", "deploy/prod.yaml"))
		h.updateAt(time.Second, DecideUpdate, h.vouch("q1", "allow", "U0ALICE"))
		deny := h.updateAt(2*time.Second, DecideUpdate, ApprovalDecision{CallID: "q1", Decision: "deny", By: "dave", Channel: "cli"})
		_, err := h.run()
		require.NoError(t, err)
		require.NoError(t, deny.err)
		assert.Equal(t, approval.Deny, deny.result.Decision)
		assert.NoFileExists(t, h.ws+"/deploy/prod.yaml")
	})
	t.Run("the deadline", func(t *testing.T) {
		h := quorumHarness(t, writeCallAt("q1", "deploy/prod.yaml"))
		h.input.ApprovalTimeout = time.Minute
		h.updateAt(time.Second, DecideUpdate, h.vouch("q1", "allow", "U0ALICE"))
		_, err := h.run()
		require.NoError(t, err)
		rec := h.decisions()["q1"]
		assert.Equal(t, approval.Deny, rec.Decision)
		assert.Equal(t, answerTimeout, rec.Approver)
		assert.NoFileExists(t, h.ws+"/deploy/prod.yaml")
	})
	t.Run("a deny rule", func(t *testing.T) {
		h := quorumHarness(t, writeCallAt("q1", "deploy/secrets.yaml"))
		_, err := h.run()
		require.NoError(t, err)
		rec := h.decisions()["q1"]
		assert.Equal(t, approval.Deny, rec.Decision)
		assert.Equal(t, approval.LayerRules, rec.Layer)
	})
	t.Run("a signal", func(t *testing.T) {
		h := quorumHarness(t, writeCallAt("q1", "deploy/prod.yaml"))
		h.input.ApprovalTimeout = time.Minute
		h.signalAt(time.Second, "q1", "allow")
		_, err := h.run()
		require.NoError(t, err)
		assert.Equal(t, approval.Deny, h.decisions()["q1"].Decision)
		var ignored bool
		for _, r := range h.audit() {
			ignored = ignored || (r.Event == "signal-ignored" && bytes.Contains([]byte(r.Reason), []byte("verified by a channel")))
		}
		assert.True(t, ignored, "the signal's allow is recorded as not counted")
	})
	t.Run("calls it does not cover", func(t *testing.T) {
		h := quorumHarness(t, writeCallAt("q1", "src/main.go"))
		_, err := h.run()
		require.NoError(t, err)
		assert.Equal(t, approval.LayerMode, h.decisions()["q1"].Layer, "acceptEdits still decides the rest")
		_, err = os.Stat(h.ws + "/src/main.go")
		assert.NoError(t, err)
	})
}

func writeCallAt(id, path string) demomodel.Handler {
	return demomodel.Script(
		demomodel.Calls(call(id, "Write", map[string]any{"file_path": path, "content": "x"})),
		demomodel.Say("done"),
	)
}
