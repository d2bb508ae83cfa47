package workflows

import (
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/workflows/subagent"
)

// The parent's mode changes while a child runs: widened (acceptEdits to
// bypass), the child stays as it started; narrowed (to plan), the child
// becomes plan and its Write is refused. A child still waiting its turn
// starts in the narrowed mode.
func TestTaskParentModeNarrowsRunningChild(t *testing.T) {
	release := make(chan struct{})
	held := func(file string) demomodel.Handler {
		first := true
		return func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
			if first {
				first = false
				select { // until the parent's mode has reached the child
				case <-release:
				case <-time.After(20 * time.Second):
				}
				return demomodel.Calls(call("w", "Write", map[string]any{"file_path": file, "content": "x"})), nil
			}
			return demomodel.Say("child done"), nil
		}
	}
	m := newByTask(map[string]demomodel.Handler{
		"test task": demomodel.Script(demomodel.Calls(taskCall("a", "A", "write a"), taskCall("b", "B", "write b")), demomodel.Say("done")),
		"write a":   held("a.txt"),
		"write b": demomodel.Script(
			demomodel.Calls(call("w", "Write", map[string]any{"file_path": "b.txt", "content": "x"})), demomodel.Say("child done")),
	})
	h := newHarness(t, m.handle, withSettings(`{"subagents": {"maxParallel": 1}}`))
	h.input.Mode = approval.ModeAcceptEdits
	const childA = "default-test-workflow-id-task-a"
	var childAudit []approval.AuditRecord
	sent := false
	var poll func()
	poll = func() {
		st := h.status()
		switch {
		case !sent && len(st.Children) > 0 && !st.Children[0].Waiting:
			h.env.SignalWorkflow(ModeSignal, ModeChange{Mode: "bypass", By: "alice"})
			h.env.SignalWorkflow(ModeSignal, ModeChange{Mode: "plan", By: "bob"})
			sent = true
		case sent && childAudit == nil:
			if cs := childStatus(t, h, childA); cs.Mode == approval.ModePlan {
				v, err := h.env.QueryWorkflowByID(childA, AuditQuery)
				require.NoError(t, err)
				require.NoError(t, v.Get(&childAudit))
				close(release)
				return
			}
		}
		h.env.RegisterDelayedCallback(poll, 100*time.Millisecond)
	}
	h.env.RegisterDelayedCallback(poll, 100*time.Millisecond)
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	var changes []string
	for _, r := range childAudit {
		if r.Event == "mode-changed" {
			changes = append(changes, r.Reason+" by "+r.Approver+" via "+r.Channel)
		}
	}
	assert.Equal(t, []string{"acceptEdits -> plan by bob via its parent default-test-workflow-id"}, changes,
		"the parent's bypass did not widen the child; its plan narrowed it")
	for _, task := range []string{"write a", "write b"} {
		reqs := m.requests(task)
		require.Len(t, reqs, 2, task)
		last := reqs[1].Messages[len(reqs[1].Messages)-1]
		assert.Contains(t, last.Content, "plan mode", "%s: the child's Write was refused by plan mode", task)
	}
	assert.Empty(t, h.file("a.txt"))
	assert.Empty(t, h.file("b.txt"), "the child that waited its turn started in plan mode")
}

func childStatus(t *testing.T, h *harness, id string) Status {
	t.Helper()
	v, err := h.env.QueryWorkflowByID(id, StatusQuery)
	require.NoError(t, err)
	var st Status
	require.NoError(t, v.Get(&st))
	return st
}

func TestNarrowedBy(t *testing.T) {
	for _, c := range []struct {
		own, sent, got approval.Mode
		ok             bool
	}{
		{approval.ModeAcceptEdits, approval.ModePlan, approval.ModePlan, true},
		{approval.ModeDefault, approval.ModeBypass, approval.ModeDefault, false},
		{approval.ModePlan, approval.ModeDefault, approval.ModePlan, false},
		{approval.ModeBypass, approval.ModeDontAsk, approval.ModeDontAsk, true},
		{approval.ModeDefault, "nonsense", approval.ModeDefault, false},
		{approval.ModeDefault, "", approval.ModeDefault, false},
	} {
		got, ok := subagent.NarrowedBy(c.own, c.sent)
		assert.Equal(t, c.got, got, "%s told %q", c.own, c.sent)
		assert.Equal(t, c.ok, ok, "%s told %q", c.own, c.sent)
	}
}
