package workflows

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/notify/webhook"
)

func withUserSettings(keys map[string]any) harnessOpt {
	return func(c *harnessConfig) { c.userSettings = keys }
}

func withNotifiers(n ...notify.Notifier) harnessOpt {
	return func(c *harnessConfig) { c.notifiers = n }
}

// receiver is a real HTTP server that keeps the webhook deliveries it got.
type receiver struct {
	mu     sync.Mutex
	events []map[string]any
	srv    *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var ev map[string]any
		_ = json.Unmarshal(b, &ev)
		ev["header"] = req.Header.Get(webhook.HeaderEvent)
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) got(event string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, e := range r.events {
		if e["event"] == event {
			out = append(out, e)
		}
	}
	return out
}

const testSecret = "0123456789abcdef-test-secret"

// TestEscalationStepFiresBeforeTheTimer: a call nobody answers is
// escalated after 20 s to the step's webhook (a real HTTP server), before
// its deadline denies it; the audit records the step; the model is told
// nobody answered in time, not that a person said no. A step after the
// deadline never fires; a call answered first is not escalated.
func TestEscalationStepFiresBeforeTheTimer(t *testing.T) {
	main, oncall := newReceiver(t), newReceiver(t)
	n := webhook.New(webhook.Config{URLs: []string{main.srv.URL}, Secret: testSecret})
	h := newHarness(t, demomodel.Script(write("w1", "a.txt"), write("w2", "b.txt"), demomodel.Say("done")),
		withNotifiers(n),
		withUserSettings(map[string]any{"approval": map[string]any{"escalation": []map[string]any{
			{"after": "20s", "notify": "webhook", "to": oncall.srv.URL},
			{"after": "5m", "notify": "webhook"},
		}}}))
	h.input.ApprovalTimeout = time.Minute
	var escalatedBy time.Duration
	start := h.env.Now()
	h.env.RegisterDelayedCallback(func() {
		if len(h.auditEvents("escalated")) > 0 {
			escalatedBy = h.env.Now().Sub(start)
		}
	}, 30*time.Second)
	// w2 is answered before its first step.
	h.signalAt(70*time.Second, "w2", "allow")
	_, err := h.run()
	require.NoError(t, err)

	require.NotZero(t, escalatedBy, "escalated within 30 s")
	esc := h.auditEvents("escalated")
	require.Len(t, esc, 1, "one step fired, for w1 only: %+v", esc)
	assert.Equal(t, "w1", esc[0].CallID)
	assert.Contains(t, esc[0].Reason, "escalated after 20s to webhook "+oncall.srv.URL)
	assert.Equal(t, 20*time.Second, esc[0].Time.Sub(start).Round(time.Second))
	got := oncall.got(webhook.EventEscalation)
	require.Len(t, got, 1, "the step's webhook got the escalation")
	assert.Equal(t, "w1", got[0]["callId"])
	assert.Equal(t, webhook.EventEscalation, got[0]["header"])
	assert.Empty(t, main.got(webhook.EventEscalation), "the step names its own URL")
	assert.Len(t, main.got(webhook.EventPending), 2, "the worker's channel still gets every call")

	d, ok := denial(h.toolResults()["w1"])
	require.True(t, ok)
	assert.Contains(t, d.Reason, "nobody answered in time")
	assert.Contains(t, d.Reason, "no person refused this call")
	assert.NotContains(t, d.Reason, "denied by")
	assert.Equal(t, answerTimeout, h.decisions()["w1"].Approver)
}

// TestAskRuleTimeout: an ask rule with its own timeout waits that long
// (and still denies when it passes); other calls keep the job's deadline.
func TestAskRuleTimeout(t *testing.T) {
	h := newHarness(t, demomodel.Script(write("w1", "deploy.txt"), write("w2", "other.txt"), demomodel.Say("done")),
		withSettings(`{"permissions": {"ask": [{"rule": "Write(deploy.txt)", "timeout": "10m"}]}}`))
	h.input.ApprovalTimeout = 30 * time.Second
	var pending []PendingAsk
	h.env.RegisterDelayedCallback(func() { pending = h.status().Pending }, 5*time.Minute)
	_, err := h.run()
	require.NoError(t, err)
	require.Len(t, pending, 1, "w1 still waits after 5 minutes")
	assert.Equal(t, 10*time.Minute, pending[0].Deadline.Sub(pending[0].AskedAt))
	dec := h.decisions()
	assert.Equal(t, int64(10*time.Minute/time.Millisecond), dec["w1"].WaitMillis)
	assert.Equal(t, answerTimeout, dec["w1"].Approver, "denied by default when it passes")
	assert.Contains(t, dec["w1"].Reason, "no answer within 10m0s")
	assert.Equal(t, int64(30*time.Second/time.Millisecond), dec["w2"].WaitMillis)
}

// TestEscalationToAChannelTheWorkerLacks: the step is still audited, and
// that it could not be sent is said (notify-failed), never silently lost;
// the deadline still denies.
func TestEscalationToAChannelTheWorkerLacks(t *testing.T) {
	main := newReceiver(t)
	n := webhook.New(webhook.Config{URLs: []string{main.srv.URL}, Secret: testSecret})
	h := newHarness(t, demomodel.Script(write("w1", "a.txt"), demomodel.Say("done")),
		withNotifiers(n),
		withUserSettings(map[string]any{"approval": map[string]any{"escalation": []map[string]any{
			{"after": "10s", "notify": "slack", "to": "<!here>"},
		}}}))
	h.input.ApprovalTimeout = 30 * time.Second
	_, err := h.run()
	require.NoError(t, err)
	require.Len(t, h.auditEvents("escalated"), 1)
	failed := h.auditEvents("notify-failed")
	require.Len(t, failed, 1)
	assert.Contains(t, failed[0].Reason, "this worker has no slack channel configured")
	assert.Equal(t, answerTimeout, h.decisions()["w1"].Approver)
}
