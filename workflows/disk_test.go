package workflows

import (
	"fmt"
	"os"
	"path/filepath"
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
	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/internal/tmpfstest"
	"github.com/custos-dev/custos/workflows/parking"
)

// The state directory fills once the first tool call has run (its
// checkpoint recorded): the job cannot save that call's decision, so it
// parks before the second call, says why, and goes on by itself once
// space is freed; the audit file then holds every decision.
func TestFullStateDirParksUntilSpaceIsBack(t *testing.T) {
	state := tmpfstest.Mount(t, "2m")
	var filler string
	reg := &hooks.Registry{}
	require.NoError(t, reg.Register(hooks.Handler{Name: "fill the state directory", Point: hooks.ToolExecuteAfter,
		Source: hooks.SourceSystem, Priority: -1, Matcher: "Write", Observe: func(p hooks.Payload) {
			if p.CallID == "w1" && filler == "" {
				filler = tmpfstest.Fill(t, state)
			}
		}}))
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("w1", "Write", map[string]any{"file_path": "one.txt", "content": "one"})),
		demomodel.Calls(call("w2", "Write", map[string]any{"file_path": "two.txt", "content": "two"})),
		demomodel.Say("done"),
	), withStateDir(state), withSystemHooks(reg))
	h.signalWhenAsked("w1", "allow")
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
	assert.Equal(t, "one", h.file("one.txt"))
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
		assert.Equal(t, w*time.Second, parking.DiskBackoff(i+1))
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

// custos' state directory fills (the workspace does not) as four Writes
// are about to run: custos cannot record their checkpoints, so the calls
// wait with the job, which says why, and all four land once space is
// back; none reaches the model as an error. A full state directory is
// custos' business, not the model's.
func TestFullStateDirParksTheCallsItCannotRecord(t *testing.T) {
	state := tmpfstest.Mount(t, "2m")
	var filler string
	var fill sync.Once
	names := []string{"a.txt", "b.txt", "c.txt", "d.txt"}
	var calls []openai.ToolCall
	for i, n := range names {
		calls = append(calls, call(fmt.Sprintf("w%d", i+1), "Write", map[string]any{"file_path": n, "content": "content of " + n}))
	}
	script := demomodel.Script(demomodel.Calls(calls...), demomodel.Say("done"))
	h := newHarness(t, func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		// Filled once the model activity has stored the conversation, so
		// the answer comes back and its calls run.
		fill.Do(func() { filler = tmpfstest.Fill(t, state) })
		return script(req)
	}, withStateDir(state), withSettings(`{"permissions": {"allow": ["Write"]}}`))
	var parked Status
	var details string
	var whileParked []string
	h.env.RegisterDelayedCallback(func() {
		parked = h.status()
		details = h.currentDetails()
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(h.ws, n)); err == nil {
				whileParked = append(whileParked, n)
			}
		}
		require.NoError(t, os.Remove(filler))
	}, 2*time.Minute)
	h.env.SetTestTimeout(3 * time.Minute)
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)

	assert.Equal(t, "waiting for disk space", parked.State)
	assert.Contains(t, details, "### Waiting for disk space")
	assert.Contains(t, details, "(ENOSPC)")
	assert.Empty(t, whileParked, "a Write ran without its checkpoint")
	for _, n := range names {
		assert.Equal(t, "content of "+n, h.file(n))
	}
	results := h.toolResults()
	require.Len(t, results, len(names))
	for id, out := range results {
		assert.NotContains(t, out, "Error", "%s reached the model as an error", id)
		assert.Contains(t, out, "Created", id)
	}
	evs := kindOf(h.events(), "disk-full")
	require.GreaterOrEqual(t, len(evs), 2)
	assert.Contains(t, evs[0].Text, "the disk holding custos' state directory is full")
	assert.Equal(t, 1, countContaining(evs, "the disk holding custos' state directory is full"), "said once for the four calls")
	assert.Equal(t, 1, countContaining(evs, "custos records the tool calls again"))
}

// countContaining counts the events whose text holds s.
func countContaining(evs []Event, s string) int {
	n := 0
	for _, e := range evs {
		if strings.Contains(e.Text, s) {
			n++
		}
	}
	return n
}
