package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testbin"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/jobevents"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// The answer of the JSON runs: 12 chunks of 8 bytes, 400 ms apart, so the
// endpoint sends its last chunk 4.4 s after its first.
const (
	jsonAnswer     = "FIRST-7 two-0005 three-06 four-007 five-008 six-0009 sevn-010 eigt-011 nine-012 ten-0013 elvn-01 LAST-END"
	jsonChunkDelay = 400 * time.Millisecond
)

// A worker in another process, with its own hub, runs the job against the
// embedded server; starter run --once --json, with a stdin holding "y",
// prints only JSON events, every one valid against the schema: the call
// waits for a person (answered through the server, never from stdin), the
// answer's text arrives before the endpoint's last chunk is sent.
func TestRunJSONWorkerInAnotherProcess(t *testing.T) {
	srv := startServer(t, "")
	runJSONAcross(t, srv.FrontendAddr(), tlsEnv(srv), testenv.Dial(t, srv))
}

// The same against Temporal's own dev server (temporal server start-dev),
// with no custos code in the server: the text reaches the client from the
// worker's stream, named in the model activity's heartbeat.
func TestRunJSONOnTemporalDevServer(t *testing.T) {
	if usingExternalServer() {
		t.Skip("starts Temporal's dev server of its own")
	}
	addr, c := startDevServer(t)
	runJSONAcross(t, addr, nil, c)
}

// startDevServer starts `temporal server start-dev` on free ports and
// returns its address and a client.
func startDevServer(t testing.TB) (string, client.Client) {
	cli := testbin.Temporal(t)
	port := freePortTB(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	dev := exec.Command(cli, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", fmt.Sprint(port),
		"--http-port", fmt.Sprint(freePortTB(t)), "--metrics-port", fmt.Sprint(freePortTB(t)), "--db-filename", filepath.Join(t.TempDir(), "dev.db"))
	var devOut bytes.Buffer
	dev.Stdout, dev.Stderr = &devOut, &devOut
	require.NoError(t, dev.Start())
	t.Cleanup(func() { _ = dev.Process.Kill(); _, _ = dev.Process.Wait() })
	var c client.Client
	require.Eventually(t, func() bool {
		var err error
		c, err = client.Dial(client.Options{HostPort: addr})
		if err != nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err == nil
	}, time.Minute, 200*time.Millisecond, "the dev server never answered: %s", &devOut)
	t.Cleanup(c.Close)
	return addr, c
}

// freePortTB is a free loopback port, for tests and benchmarks.
func freePortTB(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// jsonLine is one line of stdout and when it was read.
type jsonLine struct {
	at   time.Time
	line []byte
}

func runJSONAcross(t *testing.T, addr string, tlsVars []string, c client.Client) {
	script := demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "out.txt", "content": "from json"})),
		demomodel.Reply{Message: demomodel.Say(jsonAnswer).Message, ChunkSize: 8, ChunkDelay: jsonChunkDelay},
	)
	var mu sync.Mutex
	var asked time.Time // when the answer's request reached the endpoint
	_, base := testenv.StartModel(t, func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		r, err := script(req)
		if len(r.Message.ToolCalls) == 0 {
			mu.Lock()
			asked = time.Now()
			mu.Unlock()
		}
		return r, err
	})
	env := append([]string{"TEMPORAL_ADDRESS=" + addr, "XDG_CONFIG_HOME=" + t.TempDir(), "XDG_STATE_HOME=" + testenv.StateDir()}, testenv.ModelEnv(base)...)
	env = append(env, tlsVars...)
	startWorkerProc(t, buildWorker(t), env)

	ws := testenv.Workspace(t)
	id := fmt.Sprintf("json-%d", time.Now().UnixNano())
	cmd := exec.Command(buildStarter(t), "run", "--once", "--json", "--id", id, "--workspace", ws, "write it, then answer")
	cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir()), env...)
	cmd.Stdin = strings.NewReader("y\ny\ny\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan jsonLine)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			lines <- jsonLine{time.Now(), append([]byte(nil), sc.Bytes()...)}
		}
	}()
	var got []jsonLine
	approved := false
	deadline := time.After(3 * time.Minute)
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			if !ok {
				done = true
				break
			}
			got = append(got, l)
			if e, err := jobevents.Unmarshal(l.line); err == nil && !approved {
				if w, ok := e.(jobevents.Waiting); ok && w.Call == "w1" {
					approved = true
					require.NoError(t, c.SignalWorkflow(context.Background(), id, "", jobapi.ApprovalSignal,
						jobapi.ApprovalDecision{CallID: "w1", Decision: "allow", By: "e2e-approver", Channel: "test"}))
				}
			}
		case <-deadline:
			t.Fatalf("starter run --json did not end; stdout so far: %d lines; stderr:\n%s", len(got), stderr.String())
		}
	}
	require.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())
	mu.Lock()
	at := asked
	mu.Unlock()
	checkJSONRun(t, id, ws, got, at)
}

// checkJSONRun checks the events of runJSONAcross's job.
func checkJSONRun(t *testing.T, id, ws string, got []jsonLine, asked time.Time) {
	require.NotEmpty(t, got)
	var evs []jobevents.Event
	var text strings.Builder
	var firstText time.Time
	for _, l := range got {
		require.NoError(t, jobevents.Validate(l.line), "%s", l.line)
		e, err := jobevents.Unmarshal(l.line)
		require.NoError(t, err)
		evs = append(evs, e)
		if tx, ok := e.(jobevents.Text); ok {
			text.WriteString(tx.Text)
			if firstText.IsZero() && tx.Text != "" {
				firstText = l.at
			}
		}
	}
	job, ok := evs[0].(jobevents.Job)
	require.True(t, ok, "the first event is the job: %T", evs[0])
	assert.Equal(t, id, job.Job)
	assert.Equal(t, ws, job.Workspace)
	res, ok := evs[len(evs)-1].(jobevents.Result)
	require.True(t, ok, "the last event is the result: %T", evs[len(evs)-1])
	assert.Equal(t, jobevents.StatusDone, res.Status)
	assert.Equal(t, jsonAnswer, res.Answer)
	assert.Equal(t, jsonAnswer, text.String(), "the answer's text, streamed")
	want := map[string]bool{"tool_call": false, "waiting": false, "decision": false, "tool_result": false, "answer": false}
	for _, e := range evs {
		switch e := e.(type) {
		case jobevents.ToolCall:
			want["tool_call"] = e.Call == "w1" && e.Tool == "Write" && strings.Contains(string(e.Input), "from json")
		case jobevents.Waiting:
			want["waiting"] = e.Call == "w1"
		case jobevents.Decision:
			want["decision"] = e.Call == "w1" && e.Decision == "allow" && e.By == "e2e-approver" && e.Layer == "human"
		case jobevents.ToolResult:
			want["tool_result"] = e.Call == "w1" && e.OK
		case jobevents.Answer:
			want["answer"] = e.Text == jsonAnswer && e.Streamed
		}
	}
	for k, v := range want {
		assert.True(t, v, "the %s event, as expected", k)
	}
	require.False(t, asked.IsZero(), "the endpoint was asked for the answer")
	require.False(t, firstText.IsZero(), "text arrived")
	lastChunk := asked.Add(11 * jsonChunkDelay)
	t.Logf("first text %v after the request; the endpoint's last chunk at %v", firstText.Sub(asked).Round(time.Millisecond), lastChunk.Sub(asked))
	assert.True(t, firstText.Before(lastChunk), "the first text (%v after the request) came before the endpoint's last chunk (%v)",
		firstText.Sub(asked), lastChunk.Sub(asked))
}

// Exit codes: 2 and nothing on stdout for a usage error; 4 and a max_turns
// result for a job its turn limit stopped; 3 and a failed result for a job
// terminated while it waits.
func TestRunJSONExitCodes(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	_, base := testenv.StartModel(t, func(openai.ChatCompletionRequest) (demomodel.Reply, error) {
		return demomodel.Calls(demomodel.ToolCall("", "Glob", map[string]any{"pattern": "*"})), nil
	})
	env := append([]string{"TEMPORAL_ADDRESS=" + srv.FrontendAddr(), "XDG_CONFIG_HOME=" + t.TempDir(), "XDG_STATE_HOME=" + testenv.StateDir()}, testenv.ModelEnv(base)...)
	env = append(env, tlsEnv(srv)...)
	startWorkerProc(t, buildWorker(t), env)
	starter := func(args ...string) (int, []byte, string) {
		cmd := exec.Command(buildStarter(t), args...)
		cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir()), env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), out.Bytes(), errb.String()
		}
		require.NoError(t, err)
		return 0, out.Bytes(), errb.String()
	}
	code, out, _ := starter("run", "--json", "--once")
	assert.Equal(t, 2, code, "no task")
	assert.Empty(t, out)
	code, out, _ = starter("run", "--json", "--bogus", "x")
	assert.Equal(t, 2, code, "an unknown flag")
	assert.Empty(t, out)

	ws := testenv.Workspace(t)
	code, out, errText := starter("run", "--once", "--json", "--max-turns", "2", "--workspace", ws, "look forever")
	assert.Equal(t, 4, code, "the turn limit: %s", errText)
	assert.Equal(t, jobevents.StatusMaxTurns, lastResult(t, out).Status)

	id := fmt.Sprintf("json-fail-%d", time.Now().UnixNano())
	go func() {
		// The job calls Glob turn after turn: terminate it on its way.
		require.Eventually(t, func() bool {
			st, err := jobevents.QueryStatus(context.Background(), c, id)
			return err == nil && st.Turn > 0
		}, pendingWait, 100*time.Millisecond)
		_ = c.TerminateWorkflow(context.Background(), id, "", "e2e: a failed job")
	}()
	code, out, errText = starter("run", "--once", "--json", "--id", id, "--workspace", ws, "look")
	assert.Equal(t, 3, code, "a terminated job: %s", errText)
	assert.Equal(t, jobevents.StatusFailed, lastResult(t, out).Status)
}

// lastResult is the result event that ends out, every line checked.
func lastResult(t *testing.T, out []byte) jobevents.Result {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range lines {
		require.NoError(t, jobevents.Validate([]byte(l)), "%s", l)
	}
	e, err := jobevents.Unmarshal([]byte(lines[len(lines)-1]))
	require.NoError(t, err)
	r, ok := e.(jobevents.Result)
	require.True(t, ok, "last line: %s", lines[len(lines)-1])
	return r
}
