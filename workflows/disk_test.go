package workflows

import (
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/tmpfstest"
)

// The state directory fills while the first tool call waits for its
// approval: the job cannot save that call's decision, so it parks before
// the second call, says why, and goes on by itself once space is freed;
// the audit file then holds every decision.
func TestFullStateDirParksUntilSpaceIsBack(t *testing.T) {
	state := tmpfstest.Mount(t, "2m")
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("w1", "Write", map[string]any{"file_path": "one.txt", "content": "one"})),
		demomodel.Calls(call("w2", "Write", map[string]any{"file_path": "two.txt", "content": "two"})),
		demomodel.Say("done"),
	), withStateDir(state))
	// Filled once the model's answer is in (the model activity writes to
	// the state directory too), before the call runs and is saved.
	var filler string
	var poll func()
	poll = func() {
		if !slices.ContainsFunc(h.status().Pending, func(p PendingAsk) bool { return p.CallID == "w1" }) {
			h.env.RegisterDelayedCallback(poll, 100*time.Millisecond)
			return
		}
		filler = tmpfstest.Fill(t, state)
		h.env.SignalWorkflow(ApprovalSignal, ApprovalDecision{CallID: "w1", Decision: "allow", By: "test"})
	}
	h.env.RegisterDelayedCallback(poll, 100*time.Millisecond)
	h.signalWhenAsked("w2", "allow")
	var parked Status
	var details string
	var twoWhileParked bool
	h.env.RegisterDelayedCallback(func() {
		parked = h.status()
		details = h.currentDetails()
		_, err := os.Stat(h.ws + "/two.txt")
		twoWhileParked = err == nil
		require.NoError(t, os.Remove(filler))
	}, 2*time.Minute)
	h.env.SetTestTimeout(3 * time.Minute)
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)

	assert.Equal(t, "waiting for disk space", parked.State)
	assert.Contains(t, details, "### Waiting for disk space")
	assert.Contains(t, details, "(ENOSPC)")
	assert.False(t, twoWhileParked, "the second call ran before the first was saved")
	assert.Equal(t, "two", h.file("two.txt"))

	evs := kindOf(h.events(), "disk-full")
	require.Len(t, evs, 2, "one event for the full disk, one for the recovery")
	assert.Contains(t, evs[0].Text, "the disk holding custos' state directory is full")
	assert.Contains(t, evs[1].Text, "saved again, after ")

	recs, err := activities.ReadAudit(h.jobFiles().Audit)
	require.NoError(t, err)
	decided := map[string]approval.Decision{}
	var events []string
	for _, r := range recs {
		if r.Event == "" {
			decided[r.CallID] = r.Decision
		} else {
			events = append(events, r.Event)
		}
	}
	assert.Equal(t, map[string]approval.Decision{"w1": approval.Allow, "w2": approval.Allow}, decided)
	assert.Contains(t, events, "disk-full")
}

func TestDiskBackoff(t *testing.T) {
	want := []time.Duration{5, 10, 20, 40, 60, 60}
	for i, w := range want {
		assert.Equal(t, w*time.Second, diskBackoff(i+1))
	}
}

// The model activity stores the conversation and the answer's blobs in the
// state directory too: a full one parks the model call, which is made again
// once space is back.
func TestFullStateDirParksTheModelCall(t *testing.T) {
	state := tmpfstest.Mount(t, "2m")
	var filler string
	var fill sync.Once
	script := demomodel.Script(
		// Big arguments go to a blob, which the full disk refuses.
		demomodel.Calls(call("w1", "Write", map[string]any{"file_path": "one.txt", "content": strings.Repeat("1", 64<<10)})),
		demomodel.Say("done"),
	)
	h := newHarness(t, func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		fill.Do(func() { filler = tmpfstest.Fill(t, state) })
		return script(req)
	}, withStateDir(state))
	var parked Status
	h.env.RegisterDelayedCallback(func() {
		parked = h.status()
		require.NoError(t, os.Remove(filler))
	}, 3*time.Second)
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	assert.Equal(t, "waiting for disk space", parked.State)
	require.NotNil(t, parked.ModelWait)
	assert.Equal(t, "disk-full", parked.ModelWait.Kind)
	assert.Contains(t, parked.ModelWait.Error, "(ENOSPC)")
	assert.Empty(t, h.file("one.txt"), "the refused answer's call never ran")
}
