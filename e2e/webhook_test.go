package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/notify/webhook"
	"github.com/custos-dev/custos/workflows/jobapi"
)

const hookSecret = "e2e-webhook-secret-0123456789"

type hookDelivery struct {
	event, id string
	body      map[string]any
	verified  error
}

// hookReceiver verifies each delivery as docs/webhooks.md tells receivers.
type hookReceiver struct {
	mu  sync.Mutex
	got []hookDelivery
}

func (h *hookReceiver) record(r *http.Request) hookDelivery {
	raw, _ := io.ReadAll(r.Body)
	d := hookDelivery{event: r.Header.Get(webhook.HeaderEvent), id: r.Header.Get(webhook.HeaderDelivery),
		verified: webhook.Verify(hookSecret, r.Header, raw, time.Now(), 5*time.Minute)}
	_ = json.Unmarshal(raw, &d.body)
	h.mu.Lock()
	h.got = append(h.got, d)
	h.mu.Unlock()
	return d
}

func (h *hookReceiver) events(event string) []hookDelivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hookDelivery
	for _, d := range h.got {
		if d.event == event {
			out = append(out, d)
		}
	}
	return out
}

// Two receivers: one fails its first delivery with a 500 (Temporal retries
// it), one hangs until the test lets it go. The hanging one does not hold
// the job up: the approved call runs and the model is asked again while
// that receiver is still stuck on the first event.
func TestWebhooks(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)

	flaky := &hookReceiver{}
	var flakyCalls atomic.Int32
	flakySrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		flaky.record(r)
		if flakyCalls.Add(1) == 1 {
			http.Error(w, "down for a moment", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(flakySrv.Close)

	stuck := &hookReceiver{}
	release := make(chan struct{})
	var stuckEntered, stuckReturned atomic.Int32
	stuckSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stuck.record(r)
		stuckEntered.Add(1)
		<-release
		stuckReturned.Add(1)
	}))
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(func() { letGo(); stuckSrv.Close() })

	cfg := webhook.Config{URLs: []string{flakySrv.URL + "/hook", stuckSrv.URL + "/hook"}, Secret: hookSecret}
	require.NoError(t, cfg.Validate())
	ch, err := app.StartChannels(context.Background(), c, app.ChannelConfig{Webhook: &cfg}, testenv.Logger())
	require.NoError(t, err)
	t.Cleanup(ch.Close)
	model, base := testenv.StartModel(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "hook.txt", "content": "hooked\n"})),
		demomodel.Say("done"),
	))
	testenv.StartWorkers(t, c, base, app.Options{Notifiers: ch.Notifiers})

	ws := testenv.Workspace(t)
	ctx := context.Background()
	run := testenv.StartJob(t, c, "webhooks", jobapi.JobInput{Once: true, Task: "write", Workspace: ws, ApprovalTimeout: 10 * time.Minute})
	testenv.WaitPending(t, c, run.GetID(), "w1", pendingWait)
	require.Eventually(t, func() bool { return stuckEntered.Load() == 1 }, time.Minute, 20*time.Millisecond, "the stuck receiver never got the pending event")

	// Answer while the stuck receiver still holds the announcement.
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: jobapi.DecideUpdate,
		Args: []any{jobapi.ApprovalDecision{CallID: "w1", Decision: "allow", By: "e2e", Channel: "test"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil))
	require.Eventually(t, func() bool { return len(model.Requests()) >= 2 }, time.Minute, 20*time.Millisecond, "the job did not go on")
	b, err := os.ReadFile(filepath.Join(ws, "hook.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hooked\n", string(b))
	assert.Zero(t, stuckReturned.Load(), "the call ran and the model was asked again while the receiver was still stuck")
	letGo()

	testenv.Finished(t, c, run.GetID(), 2*time.Minute)
	require.Eventually(t, func() bool { return len(flaky.events("decided")) == 1 && len(stuck.events("decided")) == 1 },
		time.Minute, 50*time.Millisecond, "decided events not delivered")

	// The flaky receiver got the pending event twice (500, then the retry),
	// with the same delivery ID; every delivery verifies.
	pend := flaky.events("pending")
	require.Len(t, pend, 2)
	assert.Equal(t, pend[0].id, pend[1].id)
	assert.Len(t, stuck.events("pending"), 1, "the retry did not resend to the receiver that had accepted")
	for _, d := range append(append(pend, flaky.events("decided")...), stuck.got...) {
		assert.NoError(t, d.verified, "%s %s", d.event, d.id)
	}
	p := pend[1].body
	assert.Equal(t, "w1", p["callId"])
	assert.Equal(t, "Write hook.txt", p["summary"])
	assert.Equal(t, map[string]any{"workflowId": "webhooks", "update": "decide", "signal": "approval",
		"payload": map[string]any{"callId": "w1", "decision": "allow", "by": "you"}}, p["answer"])
	assert.Contains(t, p["preview"], "+hooked")
	d := flaky.events("decided")[0].body
	assert.Equal(t, "allow", d["decision"])
	assert.Equal(t, "e2e", d["by"])
	assert.Equal(t, "test", d["channel"])
}
