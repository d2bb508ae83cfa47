package workflows

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/workflows/parking"
)

// refusing answers the first n requests with r, then follows next.
func refusing(n int, r demomodel.Reply, next demomodel.Handler) demomodel.Handler {
	var mu sync.Mutex
	seen := 0
	return func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		mu.Lock()
		seen++
		refuse := seen <= n
		mu.Unlock()
		if refuse {
			return r, nil
		}
		return next(req)
	}
}

func kindOf(evs []Event, kind string) []Event {
	var out []Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// A key refused ten times: the job waits 5 s, 10 s, 20 s, 40 s, then a
// minute between attempts (never more), says so once, and goes on.
func TestParkedModelCallBacksOffToAMinute(t *testing.T) {
	h := newHarness(t, refusing(10, demomodel.Fail(http.StatusUnauthorized, "bad key"), demomodel.Script(demomodel.Say("done"))))
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	waits := kindOf(h.events(), "model-wait")
	require.Len(t, waits, 2, "one event for the error, one for the recovery")
	assert.Contains(t, waits[0].Text, "the endpoint refuses the key: set OPENAI_API_KEY on the workers serving task queue custos")
	// 5+10+20+40 s, then six waits of a minute.
	assert.Contains(t, waits[1].Text, "after 10 failed attempts over 7m15s")
	assert.Equal(t, 1, res.Usage.ModelCalls, "failed attempts are not model calls")
}

// The retry Update cuts the backoff: the next attempt comes at once.
func TestRetryUpdateCutsTheBackoff(t *testing.T) {
	h := newHarness(t, refusing(1, demomodel.Fail(http.StatusForbidden, "no access"), demomodel.Script(demomodel.Say("done"))))
	early := h.updateAt(0, RetryUpdate, RetryRequest{By: "test"})
	retry := h.updateAt(2*time.Second, RetryUpdate, RetryRequest{By: "test"})
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	require.Error(t, early.rejected, "nothing to retry before the job waits")
	assert.Contains(t, early.rejected.Error(), "not waiting for the model endpoint")
	require.True(t, retry.done)
	require.NoError(t, retry.err)
	waits := kindOf(h.events(), "model-wait")
	require.Len(t, waits, 3)
	assert.Equal(t, "retry asked by test: calling the model endpoint now", waits[1].Text)
	assert.Contains(t, waits[2].Text, "after 1 failed attempts over 2s", "not the 5 s backoff")
}

// A job parked past its run's size continues as new, carrying the wait and
// not counting the turn twice.
func TestParkedModelCallContinuesAsNew(t *testing.T) {
	h := newHarness(t, refusing(100, demomodel.Fail(http.StatusPaymentRequired, "pay"), demomodel.Script(demomodel.Say("done"))))
	h.input.ContinueAsNewEvery = 1
	h.env.ExecuteWorkflow(WorkflowName, h.input)
	require.True(t, h.env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(h.env.GetWorkflowError(), &can), "want continue-as-new, got %v", h.env.GetWorkflowError())
	var next JobInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.State.ModelWait)
	assert.Equal(t, "refused", next.State.ModelWait.Kind)
	assert.Equal(t, 1, next.State.ModelWait.Attempts)
	assert.True(t, strings.Contains(next.State.ModelWait.Fix, "no quota or credit left (HTTP 402)"), next.State.ModelWait.Fix)
	assert.Equal(t, 0, next.State.Turn, "the parked turn is made again in the next run")
}

func TestParkWait(t *testing.T) {
	want := []time.Duration{5, 10, 20, 40, 60, 60}
	for i, w := range want {
		assert.Equal(t, w*time.Second, parking.ParkWait("refused", i+1))
	}
	assert.Equal(t, time.Second, parking.ParkWait("garbage", 1))
	assert.Equal(t, time.Minute, parking.ParkWait("garbage", 30))
}

// While the job waits for the endpoint, the Web UI's details say why, what
// to fix and how to make it try now.
func TestParkedModelCallInCurrentDetails(t *testing.T) {
	h := newHarness(t, refusing(2, demomodel.Fail(http.StatusUnauthorized, "bad key"), demomodel.Script(demomodel.Say("done"))))
	var details string
	h.env.RegisterDelayedCallback(func() {
		details = h.currentDetails()
	}, 3*time.Second)
	_, err := h.run()
	require.NoError(t, err)
	assert.Contains(t, details, "waiting for the model endpoint")
	assert.Contains(t, details, "### Waiting for the model endpoint\n\nthe endpoint refuses the key: set OPENAI_API_KEY on the workers serving task queue custos.")
	assert.Contains(t, details, "Last error (attempt 1, failing since ")
	assert.Contains(t, details, "bad key")
	assert.Contains(t, details, "To try now: `starter retry default-test-workflow-id`, or Update `retry` with input `{}`.")
}

// The compaction is a model call too: a key refused while summarising parks
// the job instead of failing it.
func TestRefusedCompactionParks(t *testing.T) {
	handler, summaries := readingModel(6)
	var mu sync.Mutex
	refused := 0
	h := newHarness(t, func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		mu.Lock()
		if len(req.Tools) == 0 && refused < 2 {
			refused++
			mu.Unlock()
			return demomodel.Fail(http.StatusUnauthorized, "bad key"), nil
		}
		mu.Unlock()
		return handler(req)
	})
	h.input.ContextWindow = 3000
	h.input.MaxTurns = 20
	h.writeFile("data.txt", strings.Repeat("0123456789abcdef\n", 100))
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	assert.Equal(t, 2, refused)
	assert.GreaterOrEqual(t, *summaries, 1, "the compaction ran once the key worked")
	waits := kindOf(h.events(), "model-wait")
	require.GreaterOrEqual(t, len(waits), 2)
	assert.Contains(t, waits[0].Text, "the endpoint refuses the key")
}
