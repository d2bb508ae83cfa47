package workflows

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/demomodel"
)

// A child's call that waits for a person is shown in the parent: its
// journal (what starter run and follow print) says which child waits for
// what and how to answer, its status lists the call under the child, and
// its Web UI details name it; once answered on the child, the journal
// says how it was decided and the list is empty again.
func TestTaskChildAskShownInParent(t *testing.T) {
	m := newByTask(map[string]demomodel.Handler{
		"test task": demomodel.Script(demomodel.Calls(taskCall("a", "write it", "write x")), demomodel.Say("done")),
		"write x": demomodel.Script(
			demomodel.Calls(call("w", "Write", map[string]any{"file_path": "x.txt", "content": "x"})), demomodel.Say("wrote")),
	})
	h := newHarness(t, m.handle, withSettings(allowTask))
	const child = "default-test-workflow-id-task-a"
	var waiting Status
	var details string
	var poll func()
	poll = func() {
		st := h.status()
		if len(st.Children) == 1 && len(st.Children[0].Asks) == 1 {
			waiting, details = st, h.currentDetails()
			require.NoError(t, h.env.SignalWorkflowByID(child, ApprovalSignal, ApprovalDecision{CallID: "w", Decision: "allow", By: "alice"}))
			return
		}
		h.env.RegisterDelayedCallback(poll, 100*time.Millisecond)
	}
	h.env.RegisterDelayedCallback(poll, 100*time.Millisecond)
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	assert.Equal(t, "x", h.file("x.txt"))
	require.Len(t, waiting.Children, 1, "the child's waiting call was listed in the parent's status")
	ask := waiting.Children[0].Asks[0]
	assert.Equal(t, "w", ask.CallID)
	assert.Equal(t, "Write x.txt", ask.Summary)
	assert.Contains(t, details, "### Subagents (1)")
	assert.Contains(t, details, "waits for a person: `Write x.txt` — call `w`")
	assert.Contains(t, details, "starter approve "+child+" w")
	v, err := h.env.QueryWorkflow(EventsQuery, 0)
	require.NoError(t, err)
	var evs []Event
	require.NoError(t, v.Get(&evs))
	var notes []string
	for _, e := range evs {
		if e.Kind == "subagent" && strings.Contains(e.Text, "call w") {
			notes = append(notes, e.Text)
		}
	}
	require.Len(t, notes, 2, "the parent's journal: %v", evs)
	assert.Equal(t, "subagent "+child+" (write it) waits for a person: call w Write x.txt — answer: starter approve "+child+" w (or deny)", notes[0])
	assert.Contains(t, notes[1], "subagent "+child+" (write it): its call w Write x.txt allowed by alice")
}
