package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/notify/webhook"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Nothing the model endpoint does (a refused key, a quota, garbage, huge
// answers and calls) loses a job. Each test runs a job against the scripted
// model (a real HTTP server speaking the OpenAI protocol) on the embedded
// server, or on PostgreSQL under .ci/postgres-e2e, and checks that the job
// completed and that no event of its history is over Temporal's 256 KB
// warning size.

// eventWarnSize is Temporal's warning size for one payload.
const eventWarnSize = 256 << 10

// endpointJob runs a job in acceptEdits mode with script as the model and
// returns its client, run, workspace and model.
func endpointJob(t *testing.T, h demomodel.Handler) (client.Client, client.WorkflowRun, string, *demomodel.Server) {
	t.Helper()
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	model, base := testenv.StartModel(t, h)
	testenv.StartWorkers(t, c, base, app.Options{})
	ws := testenv.Workspace(t)
	run := testenv.StartJob(t, c, "e2e-"+t.Name(), jobapi.JobInput{Once: true, Task: "do it", Workspace: ws, Mode: approval.ModeAcceptEdits})
	return c, run, ws, model
}

// largestEvent is the size of the job's largest history event (every run),
// failing the test if one is over eventWarnSize.
func largestEvent(t *testing.T, c client.Client, id string) int {
	t.Helper()
	largest := 0
	it := c.GetWorkflowHistory(context.Background(), id, "", false, 0)
	hist := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		hist.Events = append(hist.Events, ev)
		n := proto.Size(ev)
		assert.Less(t, n, eventWarnSize, "event %d (%s) is %d bytes", ev.GetEventId(), ev.GetEventType(), n)
		largest = max(largest, n)
	}
	require.NotEmpty(t, hist.Events)
	return largest
}

func bigText(n int) string {
	line := "the quick brown fox jumps over the lazy dog 0123456789\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

// A model that writes a 5 MB file in one Write: the file is written whole,
// the model's next request carries its real call, and no event is over the
// warning size. The largest event is logged, to see how far under the
// warning size a large Write stays.
func TestEndpointWriteOfFiveMegabytes(t *testing.T) {
	content := bigText(5 << 20)
	c, run, ws, model := endpointJob(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "big.txt", "content": content})),
		demomodel.Say("wrote big.txt"),
	))
	res := testenv.Finished(t, c, run.GetID(), 3*time.Minute)
	assert.Equal(t, "wrote big.txt", res.Answer)
	assert.Equal(t, content, readFile(t, ws, "big.txt"), "the whole content is written")
	assert.NoDirExists(t, filepath.Join(ws, ".custos", "sessions"), "the blob is beside the transcript, not in the workspace")
	blobs, err := os.ReadDir(api.BlobDir(testenv.JobFiles(t, c, run.GetID())))
	require.NoError(t, err)
	assert.Len(t, blobs, 1)
	assert.Contains(t, testenv.ToolResult(model, "w1"), "big.txt")
	// The model sees its own call, whole, in the next request.
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	var args struct {
		Content string `json:"content"`
	}
	require.NoError(t, json.Unmarshal([]byte(callArguments(t, reqs[1], "w1")), &args))
	assert.Equal(t, content, args.Content)
	n := largestEvent(t, c, run.GetID())
	t.Logf("FIGURE: a 5 MiB Write in one call: largest history event %d bytes", n)
}

// callArguments is the arguments of call id as req sends them.
func callArguments(t *testing.T, req openai.ChatCompletionRequest, id string) string {
	t.Helper()
	for _, m := range req.Messages {
		for _, tc := range m.ToolCalls {
			if tc.ID == id {
				return tc.Function.Arguments
			}
		}
	}
	t.Fatalf("no call %s in the request", id)
	return ""
}

// A 3 MB text answer ends the job: its result holds the head and names the
// blob with the rest; the transcript's blob holds it whole.
func TestEndpointThreeMegabyteAnswer(t *testing.T) {
	answer := bigText(3 << 20)
	c, run, _, _ := endpointJob(t, demomodel.Script(demomodel.Say(answer)))
	res := testenv.Finished(t, c, run.GetID(), 3*time.Minute)
	assert.True(t, strings.HasPrefix(answer, res.Answer[:1000]))
	assert.Contains(t, res.Answer, "3145728 bytes")
	dir := api.BlobDir(testenv.JobFiles(t, c, run.GetID()))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	b, err := os.ReadFile(filepath.Join(dir, entries[0].Name()))
	require.NoError(t, err)
	assert.Equal(t, answer, string(b))
	largestEvent(t, c, run.GetID())
}

// A Write past the 16 MiB cap is refused as a tool result that says to
// write in parts, and the job goes on.
func TestEndpointWriteOverTheCap(t *testing.T) {
	c, run, ws, model := endpointJob(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "huge.txt", "content": bigText(17 << 20)})),
		demomodel.Say("I will write it in parts"),
	))
	res := testenv.Finished(t, c, run.GetID(), 3*time.Minute)
	assert.Equal(t, "I will write it in parts", res.Answer)
	out := testenv.ToolResult(model, "w1")
	assert.Contains(t, out, "Write it in parts")
	assert.Contains(t, out, "16 MiB")
	assert.NoFileExists(t, filepath.Join(ws, "huge.txt"))
	largestEvent(t, c, run.GetID())
}

// gate is a model that refuses (or answers garbage) until it is opened,
// then follows its script; it notes when the first request after the
// opening came.
type gate struct {
	mu       sync.Mutex
	closed   demomodel.Reply
	open     bool
	openedAt time.Time
	firstAt  time.Time
	refused  int
	next     demomodel.Handler
}

func (g *gate) handle(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open {
		g.refused++
		return g.closed, nil
	}
	if g.firstAt.IsZero() {
		g.firstAt = time.Now()
	}
	return g.next(req)
}

func (g *gate) refusals() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused
}

func (g *gate) fix() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open, g.openedAt = true, time.Now()
}

// sinceFix is how long after the fix the next model call came.
func (g *gate) sinceFix() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.firstAt.Sub(g.openedAt)
}

// waitModelWait polls status until the job waits for the endpoint after at
// least n failed attempts.
func waitModelWait(t *testing.T, c client.Client, id string, n int) jobapi.Status {
	t.Helper()
	var st jobapi.Status
	require.Eventually(t, func() bool {
		var err error
		st, err = testenv.Status(c, id)
		return err == nil && st.ModelWait != nil && st.ModelWait.Attempts >= n
	}, 2*time.Minute, 100*time.Millisecond, "the job never waited for the endpoint")
	return st
}

func events(t *testing.T, c client.Client, id string) []jobapi.Event {
	t.Helper()
	v, err := c.QueryWorkflow(context.Background(), id, "", jobapi.EventsQuery, 0)
	require.NoError(t, err)
	var evs []jobapi.Event
	require.NoError(t, v.Get(&evs))
	return evs
}

func eventsOfKind(evs []jobapi.Event, kind string) []jobapi.Event {
	var out []jobapi.Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// A refused key (401) parks the job: status names the fix, follow's events
// say it once, the job goes on when the key works again, with the retry
// Update at once. The time from the fix to the next call is logged.
func TestEndpointRefusedKeyParksUntilRetry(t *testing.T) {
	g := &gate{closed: demomodel.Fail(http.StatusUnauthorized, "Incorrect API key provided: sk-bad"), next: demomodel.Script(demomodel.Say("done"))}
	c, run, _, _ := endpointJob(t, g.handle)
	st := waitModelWait(t, c, run.GetID(), 2)
	assert.Equal(t, "refused", st.ModelWait.Kind)
	assert.Contains(t, st.ModelWait.Fix, "the endpoint refuses the key: set OPENAI_API_KEY on")
	assert.Contains(t, st.ModelWait.Error, "Incorrect API key")
	assert.Equal(t, "waiting for the model endpoint", st.State)
	assert.Len(t, eventsOfKind(events(t, c, run.GetID()), "model-wait"), 1, "one event per distinct error, not per attempt")

	g.fix()
	h, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: run.GetID(),
		UpdateName: jobapi.RetryUpdate, Args: []any{jobapi.RetryRequest{By: "e2e"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	var rr jobapi.RetryResult
	require.NoError(t, h.Get(context.Background(), &rr))
	assert.GreaterOrEqual(t, rr.Attempts, 2)

	res := testenv.Finished(t, c, run.GetID(), 2*time.Minute)
	assert.Equal(t, "done", res.Answer)
	t.Logf("FIGURE: key fixed -> next model call with the retry Update: %s", g.sinceFix())
	assert.Less(t, g.sinceFix(), 5*time.Second, "the retry cuts the backoff")
	recs := testenv.Audit(t, c, run.GetID())
	assert.True(t, hasEvent(recs, "model-refused"))
	assert.True(t, hasEvent(recs, "model-recovered"))
	largestEvent(t, c, run.GetID())

	// The Update is refused, with no trace, when the job does not wait.
	_, err = c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: run.GetID(),
		UpdateName: jobapi.RetryUpdate, Args: []any{jobapi.RetryRequest{}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	assert.Error(t, err)
}

// Without the retry Update, the job calls again by itself within the
// capped backoff once the key works.
func TestEndpointQuotaParksAndResumesByItself(t *testing.T) {
	quota := demomodel.Reply{Status: http.StatusTooManyRequests, Body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`}
	g := &gate{closed: quota, next: demomodel.Script(demomodel.Say("done"))}
	c, run, _, _ := endpointJob(t, g.handle)
	st := waitModelWait(t, c, run.GetID(), 1)
	assert.Contains(t, st.ModelWait.Fix, "no quota or credit left")
	g.fix()
	res := testenv.Finished(t, c, run.GetID(), 2*time.Minute)
	assert.Equal(t, "done", res.Answer)
	t.Logf("FIGURE: quota fixed after %d refusals -> next model call without retry: %s", g.refusals(), g.sinceFix())
	assert.Less(t, g.sinceFix(), 61*time.Second, "at most a minute between attempts")
	largestEvent(t, c, run.GetID())
}

// Garbage (a body that is not JSON, no choices, an empty message) is
// retried, with the attempts and the last error in status and an event.
func TestEndpointGarbageIsRetriedVisibly(t *testing.T) {
	var mu sync.Mutex
	n := 0
	replies := []demomodel.Reply{
		demomodel.Garbage("<html>502 Bad Gateway</html>"),
		demomodel.Garbage(`{"id":"x","object":"chat.completion","choices":[]}`),
		demomodel.Garbage(`{"id":"y","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}`),
	}
	h := func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n <= len(replies) {
			return replies[n-1], nil
		}
		return demomodel.Say("done"), nil
	}
	c, run, _, _ := endpointJob(t, h)
	id := run.GetID()
	st := waitModelWait(t, c, id, 2)
	assert.Equal(t, "garbage", st.ModelWait.Kind)
	assert.Contains(t, st.ModelWait.Fix, "not a chat completion")
	res := testenv.Finished(t, c, id, 2*time.Minute)
	assert.Equal(t, "done", res.Answer)
	waits := eventsOfKind(events(t, c, id), "model-wait")
	require.GreaterOrEqual(t, len(waits), 3, "one per distinct error, and the recovery")
	assert.Contains(t, waits[0].Text, "not a chat completion")
	assert.Contains(t, waits[len(waits)-1].Text, "answers again, after 3 failed attempts")
	largestEvent(t, c, id)
}

// A 400 that is not about the context length ends the call, with the
// error in the audit.
func TestEndpointBadRequestEndsWithAudit(t *testing.T) {
	c, run, _, _ := endpointJob(t, demomodel.Script(demomodel.Fail(http.StatusBadRequest, "Invalid value for 'tools': unsupported")))
	_, err := testenv.Result(c, run.GetID(), 2*time.Minute)
	require.Error(t, err)
	recs, rerr := activities.ReadAudit(testenv.JobFiles(t, c, run.GetID()).Audit)
	require.NoError(t, rerr)
	require.True(t, hasEvent(recs, "model-error"))
	largestEvent(t, c, run.GetID())
}

// A tool call cut at the length limit is answered with what was cut, the
// audit records it; a cut text answer is not taken as the final one.
func TestEndpointCutAnswers(t *testing.T) {
	half := `{"file_path":"a.txt","content":"half wri`
	cut := demomodel.Reply{
		Message:      openai.ChatCompletionMessage{ToolCalls: []openai.ToolCall{{ID: "w1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "Write", Arguments: half}}}},
		FinishReason: string(openai.FinishReasonLength),
	}
	cutText := demomodel.Reply{Message: openai.ChatCompletionMessage{Content: "The summary is"}, FinishReason: string(openai.FinishReasonLength)}
	c, run, ws, model := endpointJob(t, demomodel.Script(cut, cutText, demomodel.Say("done in smaller steps")))
	res := testenv.Finished(t, c, run.GetID(), 2*time.Minute)
	assert.Equal(t, "done in smaller steps", res.Answer)
	out := testenv.ToolResult(model, "w1")
	assert.Contains(t, out, "cut at the model's length limit")
	assert.Contains(t, out, fmt.Sprintf("call w1 (Write) had %d bytes of arguments", len(half)))
	assert.NoFileExists(t, filepath.Join(ws, "a.txt"))
	reqs := model.Requests()
	require.Len(t, reqs, 3)
	last := reqs[2].Messages[len(reqs[2].Messages)-1]
	assert.Equal(t, openai.ChatMessageRoleUser, last.Role)
	assert.Contains(t, last.Content, "cut at the model's length limit")
	recs := testenv.Audit(t, c, run.GetID())
	cuts := 0
	for _, r := range recs {
		if r.Event == "answer-cut" {
			cuts++
		}
	}
	assert.Equal(t, 2, cuts, "the cut call and the cut text")
	cutEvents := eventsOfKind(events(t, c, run.GetID()), "cut")
	require.Len(t, cutEvents, 1)
	assert.Contains(t, cutEvents[0].Text, "cut at the length limit after 14 bytes")
	assert.Len(t, eventsOfKind(events(t, c, run.GetID()), "answer"), 1)
	largestEvent(t, c, run.GetID())
}

func hasEvent(recs []approval.AuditRecord, event string) bool {
	for _, r := range recs {
		if r.Event == event {
			return true
		}
	}
	return false
}

// An unknown model (404) parks the job, and the webhook channel is told
// why and what to fix, then that the job goes on.
func TestEndpointUnknownModelTellsTheChannels(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	got := &hookReceiver{}
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.record(r)
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(hooks.Close)
	cfg := webhook.Config{URLs: []string{hooks.URL + "/hook"}, Secret: hookSecret}
	require.NoError(t, cfg.Validate())
	ch, err := app.StartChannels(context.Background(), c, app.ChannelConfig{Webhook: &cfg}, testenv.Logger())
	require.NoError(t, err)
	t.Cleanup(ch.Close)
	g := &gate{closed: demomodel.Fail(http.StatusNotFound, "The model `fake` does not exist"), next: demomodel.Script(demomodel.Say("done"))}
	_, base := testenv.StartModel(t, g.handle)
	testenv.StartWorkers(t, c, base, app.Options{Notifiers: ch.Notifiers})
	run := testenv.StartJob(t, c, "e2e-"+t.Name(), jobapi.JobInput{Once: true, Task: "do it", Workspace: testenv.Workspace(t)})

	st := waitModelWait(t, c, run.GetID(), 1)
	assert.Contains(t, st.ModelWait.Fix, "does not know model fake: set OPENAI_MODEL")
	require.Eventually(t, func() bool { return len(got.events(webhook.EventNotice)) == 1 }, time.Minute, 50*time.Millisecond, "the channel was not told")
	n := got.events(webhook.EventNotice)[0]
	require.NoError(t, n.verified)
	assert.Equal(t, "model-wait", n.body["kind"])
	assert.Contains(t, n.body["fix"], "does not know model fake")
	assert.Equal(t, jobapi.RetryUpdate, n.body["retry"])

	g.fix()
	res := testenv.Finished(t, c, run.GetID(), 2*time.Minute)
	assert.Equal(t, "done", res.Answer)
	require.Eventually(t, func() bool { return len(got.events(webhook.EventNotice)) == 2 }, time.Minute, 50*time.Millisecond, "the channel was not told the job goes on")
	assert.Equal(t, "model-recovered", got.events(webhook.EventNotice)[1].body["kind"])
	largestEvent(t, c, run.GetID())
}

// Garbage and refusals are counted in the worker's metrics, by kind.
func TestEndpointErrorsInMetrics(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	t.Setenv("CUSTOS_METRICS_ADDR", "127.0.0.1:0")
	tel, err := app.StartTelemetry(context.Background(), app.TelemetryFromEnv("host-m", testenv.Logger()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = tel.Close(context.Background()) })
	wc, err := tel.Client(c, "default", testenv.Logger())
	require.NoError(t, err)
	t.Cleanup(wc.Close)
	_, base := testenv.StartModel(t, demomodel.Script(
		demomodel.Garbage("not json"), demomodel.Garbage("still not json"),
		demomodel.Fail(http.StatusUnauthorized, "bad key"),
		demomodel.Say("done")))
	testenv.StartWorkers(t, wc, base, app.Options{})
	run := testenv.StartJob(t, wc, "e2e-"+t.Name(), jobapi.JobInput{Once: true, Task: "do it", Workspace: testenv.Workspace(t)})
	// The refusal waits 5 s; do not wait for it.
	require.Eventually(t, func() bool {
		st, err := testenv.Status(c, run.GetID())
		return err == nil && st.ModelWait != nil && st.ModelWait.Kind == "refused"
	}, time.Minute, 50*time.Millisecond)
	_, err = c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: run.GetID(),
		UpdateName: jobapi.RetryUpdate, Args: []any{jobapi.RetryRequest{}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	testenv.Finished(t, c, run.GetID(), time.Minute)
	m := scrape(t, tel.MetricsURL)
	assert.Equal(t, 2.0, m.value("custos_model_errors_total", "kind", "garbage"))
	assert.Equal(t, 1.0, m.value("custos_model_errors_total", "kind", "refused"))
	largestEvent(t, c, run.GetID())
}
