package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
)

// TestReusedCallIDGetsItsOwnIdentity: the model reuses a call ID in a later
// turn. The answer given for the first call, sent again (a stale Slack
// button, a replayed CLI command), must not approve the second; the second
// call answers only to its own identity, which every channel is shown.
func TestReusedCallIDGetsItsOwnIdentity(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("c1", "Write", map[string]any{"file_path": "benign.txt", "content": "ok"})),
		demomodel.Calls(call("c1", "Write", map[string]any{"file_path": "evil.txt", "content": "pwned"})),
		demomodel.Say("done"),
	))
	first := h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "c1", Decision: "allow", By: "alice", Channel: "cli"})
	// The same answer again, while the second call waits.
	stale := h.updateAt(5*time.Second, DecideUpdate, ApprovalDecision{CallID: "c1", Decision: "allow", By: "alice", Channel: "slack"})
	h.signalAt(6*time.Second, "c1", "allow")
	var pendingAt7 []string
	h.env.RegisterDelayedCallback(func() {
		st := h.status()
		for _, p := range st.Pending {
			pendingAt7 = append(pendingAt7, p.CallID+" "+p.Summary)
		}
	}, 7*time.Second)
	second := h.updateAt(8*time.Second, DecideUpdate, ApprovalDecision{CallID: "c1_t2", Decision: "deny", By: "bob", Channel: "cli"})
	_, err := h.run()
	require.NoError(t, err)

	require.True(t, first.accepted, "%v", first.rejected)
	assert.Equal(t, "ok", h.file("benign.txt"))
	require.Error(t, stale.rejected, "an answer naming the first call does not reach the second")
	assert.Contains(t, stale.rejected.Error(), "already allowed")
	assert.Equal(t, []string{"c1_t2 Write evil.txt"}, pendingAt7, "the second call waits under its own identity; the stale signal did not answer it")
	require.True(t, second.accepted, "%v", second.rejected)
	assert.Equal(t, approval.Deny, second.result.Decision)
	assert.Empty(t, h.file("evil.txt"))

	d := h.decisions()
	assert.Equal(t, "alice", d["c1"].Approver)
	assert.Equal(t, "bob", d["c1_t2"].Approver)
	// The conversation keeps the model's ID.
	reqs := h.oai.Requests()
	last := reqs[len(reqs)-1].Messages[len(reqs[len(reqs)-1].Messages)-1]
	assert.Equal(t, "c1", last.ToolCallID)
}
