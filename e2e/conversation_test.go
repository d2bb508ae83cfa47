package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/settingsfile"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// convModel is a scripted model for conversations: it answers each request
// with "re: " and the last user message, and keeps every request it was
// sent (demomodel.Server.Requests blocks while a handler hangs, and a test
// here makes one hang).
type convModel struct {
	mu   sync.Mutex
	reqs []openai.ChatCompletionRequest
	// hold, when it returns a channel for a request, makes that request
	// wait on it and fail with a 503 (the worker that asked is gone).
	hold func(n int, req openai.ChatCompletionRequest) <-chan struct{}
}

func (m *convModel) handle(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	n := len(m.reqs)
	m.mu.Unlock()
	if m.hold != nil {
		if ch := m.hold(n, req); ch != nil {
			<-ch
			return demomodel.Fail(503, "the worker that asked is gone"), nil
		}
	}
	return demomodel.Say("re: " + lastUser(req)), nil
}

func (m *convModel) requests() []openai.ChatCompletionRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), m.reqs...)
}

// lastUser is the text of a request's last user message.
func lastUser(req openai.ChatCompletionRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == openai.ChatMessageRoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

// userTexts are a request's user messages, in order.
func userTexts(req openai.ChatCompletionRequest) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleUser {
			out = append(out, m.Content)
		}
	}
	return out
}

// sendMsg sends m through the message Update under updateID and waits for
// its result.
func sendMsg(t testing.TB, c client.Client, id, updateID string, m jobapi.Message) jobapi.MessageResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateID: updateID,
		UpdateName: jobapi.MessageUpdate, Args: []any{m}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err, "message %q", m.Text)
	var res jobapi.MessageResult
	require.NoError(t, h.Get(ctx, &res), "message %q", m.Text)
	return res
}

// trySendMsg is sendMsg that returns the error instead of failing.
func trySendMsg(c client.Client, id, updateID string, m jobapi.Message) (jobapi.MessageResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res jobapi.MessageResult
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateID: updateID,
		UpdateName: jobapi.MessageUpdate, Args: []any{m}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	return res, err
}

// update runs the Update name of job id with arg and returns its result.
func update[T any](t testing.TB, c client.Client, id, name string, arg any) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: name,
		Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err, name)
	var res T
	require.NoError(t, h.Get(ctx, &res), name)
	return res
}

// waitAnswer waits until job id waits for a message with answer as its
// last answer.
func waitAnswer(t testing.TB, c client.Client, id, answer string, within time.Duration) jobapi.Status {
	t.Helper()
	var st jobapi.Status
	ok := assert.Eventually(t, func() bool {
		s, err := testenv.Status(c, id)
		if err != nil {
			return false
		}
		st = s
		return s.State == jobapi.PhaseWaitingMessage && s.LastAnswer == answer
	}, within, 20*time.Millisecond)
	if !ok {
		testenv.LogJob(t, c, id)
		t.Fatalf("job %s never waited with the answer %q; last state %q, answer %q", id, answer, st.State, st.LastAnswer)
	}
	return st
}

// endJob ends job id through the end Update and checks it completes so.
func endJob(t testing.TB, c client.Client, id string) jobapi.JobResult {
	t.Helper()
	update[jobapi.EndResult](t, c, id, jobapi.EndUpdate, jobapi.End{By: "e2e"})
	res := testenv.Finished(t, c, id, time.Minute)
	assert.Equal(t, "ended", res.Reason)
	return res
}

// assertEachOnce checks that every request is the one before it plus what
// happened since (nothing lost, nothing changed) and that no user message
// appears twice in one request.
func assertEachOnce(t *testing.T, reqs []openai.ChatCompletionRequest) {
	t.Helper()
	var prev []openai.ChatCompletionMessage
	for i, r := range reqs {
		seen := map[string]bool{}
		for _, u := range userTexts(r) {
			assert.False(t, seen[u], "request %d has the user message %q twice", i+1, u)
			seen[u] = true
		}
		if len(r.Messages) < len(prev) {
			// A retried request is the one before it again.
			assert.Equal(t, len(reqs[i-1].Messages), len(r.Messages), "request %d lost messages", i+1)
		}
		for k := range min(len(prev), len(r.Messages)) {
			assert.Equal(t, prev[k].Content, r.Messages[k].Content, "request %d changed message %d", i+1, k+1)
		}
		prev = r.Messages
	}
}

// The worker process runs the embedded server; the job has answered and
// waits for a message when it is killed with SIGKILL, server and all, and
// started again on the same file: the job still waits, a message sent
// twice under one Update ID and again under another reaches the model
// once, and the end Update ends the job.
func TestConversationWaitingSurvivesKill9OfServerAndWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the worker binary and kills it")
	}
	if usingExternalServer() {
		t.Skip("kills and restarts the embedded server, which " + externalAddrEnv + " replaces")
	}
	bin := buildWorker(t)
	db := filepath.Join(t.TempDir(), "temporal.db")
	port := freePort(t)
	model := &convModel{}
	_, base := testenv.StartModel(t, model.handle)
	env := append(testenv.ModelEnv(base), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+testenv.StateDir(), "TEMPORAL_ADDRESS=")
	args := []string{"--db", db, "--port", fmt.Sprint(port), "--ui-port", "-1"}
	w := startWorkerProc(t, bin, env, args...)
	c := dialEventually(t, fmt.Sprintf("127.0.0.1:%d", port), devserver.TLSFilesIn(filepath.Join(filepath.Dir(db), "tls")))

	id := "conv-kill9-waiting"
	testenv.StartJob(t, c, id, jobapi.JobInput{Task: "hello", Workspace: testenv.Workspace(t)})
	waitAnswer(t, c, id, "re: hello", pendingWait)

	w.kill()
	startWorkerProc(t, bin, env, args...)
	// The client reconnects by itself; the job is read back from SQLite.
	st := waitAnswer(t, c, id, "re: hello", pendingWait)
	assert.Equal(t, 1, st.Turn)

	first := sendMsg(t, c, id, "u-1", jobapi.Message{Text: "second", ID: "m-2", By: "e2e"})
	assert.Equal(t, "next", first.Delivery)
	assert.Equal(t, "m-2", first.ID)
	again := sendMsg(t, c, id, "u-1", jobapi.Message{Text: "second", ID: "m-2", By: "e2e"})
	assert.Equal(t, first, again, "the server answers a repeated Update ID with the first result")
	waitAnswer(t, c, id, "re: second", time.Minute)
	dup := sendMsg(t, c, id, "u-2", jobapi.Message{Text: "second", ID: "m-2", By: "e2e"})
	assert.Equal(t, "duplicate", dup.Delivery, "the same message ID under another Update counts once")

	// A third message shows what the model was sent after the duplicate.
	third := sendMsg(t, c, id, "u-3", jobapi.Message{Text: "third", By: "e2e"})
	assert.Equal(t, "next", third.Delivery)
	assert.Equal(t, "u-3", third.ID, "a message without an ID is known by its Update's")
	waitAnswer(t, c, id, "re: third", time.Minute)

	reqs := model.requests()
	require.Len(t, reqs, 3, "one model request for the task and each message counted")
	assert.Equal(t, []string{"hello", "second"}, userTexts(reqs[1]))
	assert.Equal(t, []string{"hello", "second", "third"}, userTexts(reqs[2]))
	assertEachOnce(t, reqs)

	res := endJob(t, c, id)
	assert.Equal(t, "re: third", res.Answer)
}

// A message arrives while the job waits; the model call it starts hangs
// until the worker process that made it is killed with SIGKILL, and a
// second message is queued meanwhile. A new worker answers both, in order,
// each reaching the model once.
func TestConversationMessageSurvivesKill9OfWorkerMidModelCall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the worker binary and kills it")
	}
	bin := buildWorker(t)
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	release := make(chan struct{})
	var heldOnce sync.Once
	model := &convModel{hold: func(_ int, req openai.ChatCompletionRequest) <-chan struct{} {
		var ch <-chan struct{}
		if lastUser(req) == "second" {
			heldOnce.Do(func() { ch = release })
		}
		return ch
	}}
	_, base := testenv.StartModel(t, model.handle)
	env := workerEnv(srv, base, t.TempDir())
	w := startWorkerProc(t, bin, env)

	id := fmt.Sprintf("conv-kill9-thinking-%d", time.Now().UnixNano())
	testenv.StartJob(t, c, id, jobapi.JobInput{Task: "hello", Workspace: testenv.Workspace(t)})
	waitAnswer(t, c, id, "re: hello", pendingWait)

	r := sendMsg(t, c, id, "u-second", jobapi.Message{Text: "second", By: "e2e"})
	assert.Equal(t, "next", r.Delivery)
	require.Eventually(t, func() bool {
		reqs := model.requests()
		return len(reqs) == 2 && lastUser(reqs[1]) == "second"
	}, time.Minute, 20*time.Millisecond, "the model never got the message")
	q := sendMsg(t, c, id, "u-third", jobapi.Message{Text: "third", By: "e2e"})
	assert.Equal(t, "queued", q.Delivery, "the job thinks: the message waits for its next model call")

	w.kill()
	close(release)
	startWorkerProc(t, bin, env)

	// The model activity's heartbeat timeout (30 s) tells the server the
	// first worker is gone; the new one asks again.
	waitAnswer(t, c, id, "re: third", 3*time.Minute)
	reqs := model.requests()
	assertEachOnce(t, reqs)
	var asked []string
	for _, r := range reqs {
		asked = append(asked, lastUser(r))
	}
	assert.Equal(t, []string{"hello", "second", "second", "third"}, asked,
		"the cut-off request is asked again, then the queued message")
	assert.Equal(t, []string{"hello", "second", "third"}, userTexts(reqs[len(reqs)-1]))
	endJob(t, c, id)
}

// procsWith lists the host's processes whose command line (arguments
// joined by spaces) contains one of subs: the pid and the line.
func procsWith(subs ...string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || len(b) == 0 {
			continue
		}
		line := string(bytes.ReplaceAll(bytes.TrimRight(b, "\x00"), []byte{0}, []byte{' '}))
		for _, s := range subs {
			if strings.Contains(line, s) {
				out = append(out, filepath.Base(filepath.Dir(d))+": "+line)
				break
			}
		}
	}
	return out
}

// lastMessage is a request's last message.
func lastMessage(req openai.ChatCompletionRequest) openai.ChatCompletionMessage {
	return req.Messages[len(req.Messages)-1]
}

// interruptJob is a job in a trusted workspace whose settings allow the
// sleeps below; its model runs a command that starts a child (sh) and
// grandchildren (the sleeps), answers the interrupt, then asks to Write,
// which waits for a person, and answers again.
type interruptJob struct {
	c     client.Client
	model *demomodel.Server
	id    string
	ws    string
	// sleeps are the command lines of the command's sleeps.
	sleeps []string
}

func startInterruptJob(t *testing.T) *interruptJob {
	t.Helper()
	srv := startServer(t, "")
	j := &interruptJob{c: testenv.Dial(t, srv), ws: testenv.Workspace(t)}
	cfg := t.TempDir()
	require.NoError(t, settingsfile.Trust(cfg, j.ws))
	require.NoError(t, os.MkdirAll(filepath.Join(j.ws, ".custos"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(j.ws, ".custos", "settings.json"),
		[]byte(`{"permissions":{"allow":["Bash(sleep *)","Bash(sh -c *)","Bash(wait)"]}}`), 0o644))

	// Numbers no other process on the machine sleeps for.
	a := 3000 + int(time.Now().UnixNano()%5000)
	j.sleeps = []string{fmt.Sprintf("sleep %d", a), fmt.Sprintf("sleep %d", a+1)}
	command := fmt.Sprintf("sh -c '%s & %s; wait'", j.sleeps[0], j.sleeps[1])
	var base string
	j.model, base = testenv.StartModel(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("b1", "Bash", map[string]any{"command": command})),
		demomodel.Say("stopped the sleep"),
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "a.txt", "content": "A"})),
		demomodel.Say("not writing it"),
	))
	testenv.StartWorkers(t, j.c, base, app.Options{UserConfigDir: cfg})
	j.id = fmt.Sprintf("conv-interrupt-%d", time.Now().UnixNano())
	testenv.StartJob(t, j.c, j.id, jobapi.JobInput{Task: "sleep a while", Workspace: j.ws, ApprovalTimeout: 10 * time.Minute})
	return j
}

// interruptBash waits until both sleeps run on the host, then interrupts
// the job with "stop that" and returns what the interrupt stopped.
func (j *interruptJob) interruptBash(t *testing.T) jobapi.InterruptResult {
	t.Helper()
	require.Eventually(t, func() bool {
		return len(procsWith(j.sleeps[0])) > 0 && len(procsWith(j.sleeps[1])) > 0
	}, pendingWait, 50*time.Millisecond, "the command's processes never showed up")
	t.Logf("running: %q", procsWith(j.sleeps...))
	return update[jobapi.InterruptResult](t, j.c, j.id, jobapi.InterruptUpdate, jobapi.Interrupt{Text: "stop that", By: "e2e"})
}

// An interrupt while Bash runs a command that starts a child and
// grandchildren kills the whole tree within seconds, and the model gets
// the interrupt's text at once. An interrupt while a call waits for
// approval denies it as interrupted.
func TestConversationInterruptKillsBashProcessTreeAndDeniesWaitingCall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sandbox")
	}
	j := startInterruptJob(t)
	c, id := j.c, j.id
	res := j.interruptBash(t)
	assert.Equal(t, []string{"Bash b1"}, res.Stopped)
	require.NotNil(t, res.Message)
	assert.Equal(t, "queued", res.Message.Delivery)
	assert.Eventually(t, func() bool { return len(procsWith(j.sleeps...)) == 0 }, 5*time.Second, 50*time.Millisecond,
		"the command's process tree outlived the interrupt")
	assert.Empty(t, procsWith(j.sleeps...))

	waitAnswer(t, c, id, "stopped the sleep", time.Minute)
	assert.Contains(t, testenv.ToolResult(j.model, "b1"), "killed")
	reqs := j.model.Requests()
	require.Len(t, reqs, 2)
	last := lastMessage(reqs[1])
	assert.Equal(t, openai.ChatMessageRoleUser, last.Role)
	assert.Equal(t, "stop that", last.Content)

	// A call waiting for a person is denied by the interrupt.
	sendMsg(t, c, id, "u-write", jobapi.Message{Text: "write it", By: "e2e"})
	testenv.WaitPending(t, c, id, "w1", pendingWait)
	res = update[jobapi.InterruptResult](t, c, id, jobapi.InterruptUpdate, jobapi.Interrupt{Text: "never mind", By: "e2e"})
	assert.Equal(t, []string{"w1"}, res.Denied)
	waitAnswer(t, c, id, "not writing it", time.Minute)
	w1 := testenv.Decisions(testenv.Audit(t, c, id))["w1"]
	assert.Equal(t, approval.Deny, w1.Decision)
	assert.Equal(t, "interrupted", w1.Approver)
	assert.NoFileExists(t, filepath.Join(j.ws, "a.txt"))
	reqs = j.model.Requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, "never mind", lastMessage(reqs[3]).Content)
	assert.Contains(t, testenv.ToolResult(j.model, "w1"), "interrupted by e2e")
	endJob(t, c, id)
}

// The model is told that its command was interrupted, and by whom, as it
// is for a call the interrupt stopped before it ran, although the Bash
// activity returns the killed command's result as a normal one
// ("[command killed: canceled ...] [exit code 143]").
func TestConversationInterruptedBashResultNamesWhoInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sandbox")
	}
	j := startInterruptJob(t)
	j.interruptBash(t)
	waitAnswer(t, j.c, j.id, "stopped the sleep", time.Minute)
	assert.Contains(t, testenv.ToolResult(j.model, "b1"), "interrupted by e2e")
}

// Many messages, each answered before the next: every one is answered in
// order, the job continues as new when its history grows, and no run's
// history nor any event in it grows with the conversation.
func TestConversationManyMessagesKeepHistoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("sends hundreds of messages")
	}
	const messages = 1000
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	model := &convModel{}
	_, base := testenv.StartModel(t, model.handle)
	testenv.StartWorkers(t, c, base, app.Options{})
	id := fmt.Sprintf("conv-many-%d", time.Now().UnixNano())
	run := testenv.StartJob(t, c, id, jobapi.JobInput{Task: "hello", Workspace: testenv.Workspace(t),
		ContextWindow: 10_000_000}) // this test is about history, not compaction
	waitAnswer(t, c, id, "re: hello", time.Minute)

	start := time.Now()
	var refused []string
	for i := 1; i <= messages; i++ {
		text := fmt.Sprintf("message %d", i)
		r, err := trySendMsg(c, id, fmt.Sprintf("u-%d", i), jobapi.Message{Text: text, By: "e2e"})
		for err != nil && strings.Contains(err.Error(), "the job is still starting") {
			// Counted, and asserted below never to happen.
			refused = append(refused, text)
			r, err = trySendMsg(c, id, fmt.Sprintf("u-%d-again", i), jobapi.Message{Text: text, By: "e2e"})
		}
		require.NoError(t, err, text)
		require.Equal(t, "next", r.Delivery, text)
		require.Equal(t, i+1, r.Seq, text)
		waitAnswer(t, c, id, "re: "+text, time.Minute)
	}
	t.Logf("%d messages answered in %s", messages, time.Since(start).Round(time.Millisecond))

	st, err := testenv.Status(c, id)
	require.NoError(t, err)
	assert.Positive(t, st.Runs, "the job continued as new")
	reqs := model.requests()
	require.Len(t, reqs, messages+1, "one model request a message")
	for i, r := range reqs[1:] {
		require.Equal(t, fmt.Sprintf("message %d", i+1), lastUser(r), "request %d", i+2)
	}
	assert.Len(t, userTexts(reqs[messages]), messages+1, "the last request carried every message once")
	assertEachOnce(t, reqs)
	endJob(t, c, id)

	// Walk every run's history.
	// A continued run's start event and the continue-as-new event before
	// it carry the job's State; the others are what a turn adds.
	runs, largest, largestType, largestStart := 0, 0, "", 0
	for runID := run.GetRunID(); runID != ""; runs++ {
		it := c.GetWorkflowHistory(context.Background(), id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		events, next, started := 0, "", ""
		for it.HasNext() {
			e, err := it.Next()
			require.NoError(t, err)
			events++
			n := proto.Size(e)
			if typ := e.GetEventType(); typ == enums.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED ||
				typ == enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
				largestStart = max(largestStart, n)
			} else if n > largest {
				largest, largestType = n, e.GetEventType().String()
			}
			if a := e.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				next = a.GetNewExecutionRunId()
			}
			if a := e.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				started = stateSizes(t, a.GetInput().GetPayloads()[0].GetData())
			}
		}
		t.Logf("run %d: %d events; its input's state: %s", runs+1, events, started)
		assert.LessOrEqual(t, events, 2100, "run %d is bounded by its event count", runs+1)
		runID = next
	}
	t.Logf("%d runs; largest event %d bytes (%s); largest carrying the State %d bytes", runs, largest, largestType, largestStart)
	assert.Greater(t, runs, 1)
	assert.Less(t, largest, 64<<10, "no event a turn adds grows with the conversation")

	// A message that reaches a continued run with its first workflow task
	// finds the carried State there (it is taken before any handler is set).
	t.Run("MessageAtContinueAsNewIsNotRefused", func(t *testing.T) {
		assert.Empty(t, refused, "messages refused with \"the job is still starting\" as the job continued as new")
	})

	// Continue-as-new carries only the newest saved audit records (the file
	// has them all), so the State a continued run starts with stays small.
	t.Run("ContinuedRunStartEventUnder64KiB", func(t *testing.T) {
		assert.Less(t, largestStart, 64<<10, "the State a continued run starts with grows with the conversation")
	})
}

// stateSizes names the largest fields of the State a job's input carries
// (JSON bytes each), for a run whose start event is large.
func stateSizes(t *testing.T, input []byte) string {
	t.Helper()
	var in struct {
		State map[string]json.RawMessage `json:"state"`
	}
	require.NoError(t, json.Unmarshal(input, &in))
	type field struct {
		name string
		n    int
	}
	var fields []field
	for k, v := range in.State {
		fields = append(fields, field{k, len(v)})
	}
	sort.Slice(fields, func(a, b int) bool { return fields[a].n > fields[b].n })
	var out []string
	for _, f := range fields[:min(4, len(fields))] {
		out = append(out, fmt.Sprintf("%s %d", f.name, f.n))
	}
	return strings.Join(out, ", ")
}

// A job that waits longer than its idle limit ends by itself.
func TestConversationIdleLimitEndsTheJob(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	model := &convModel{}
	_, base := testenv.StartModel(t, model.handle)
	testenv.StartWorkers(t, c, base, app.Options{})
	id := fmt.Sprintf("conv-idle-%d", time.Now().UnixNano())
	testenv.StartJob(t, c, id, jobapi.JobInput{Task: "hello", Workspace: testenv.Workspace(t), IdleLimit: 3 * time.Second})
	st := waitAnswer(t, c, id, "re: hello", time.Minute)
	assert.WithinDuration(t, st.WaitingSince.Add(3*time.Second), st.IdleUntil, time.Millisecond)

	res := testenv.Finished(t, c, id, time.Minute)
	assert.Equal(t, "idle", res.Reason)
	assert.Equal(t, "re: hello", res.Answer)
	assert.False(t, time.Now().Before(st.IdleUntil), "ended before its idle limit")
	assert.Len(t, model.requests(), 1)
}
