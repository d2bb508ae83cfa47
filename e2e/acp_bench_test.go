package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
)

// benchEditor is the e2e editor (acp_test.go) that also notes when each
// agent_message_chunk arrived.
type benchEditor struct {
	*editor
	cmu    sync.Mutex
	chunks []time.Time
}

func (e *benchEditor) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	if n.Update.AgentMessageChunk != nil {
		at := time.Now()
		e.cmu.Lock()
		e.chunks = append(e.chunks, at)
		e.cmu.Unlock()
	}
	return e.editor.SessionUpdate(ctx, n)
}

// takeChunks returns the chunk times so far and forgets them.
func (e *benchEditor) takeChunks() []time.Time {
	e.cmu.Lock()
	defer e.cmu.Unlock()
	c := e.chunks
	e.chunks = nil
	return c
}

// startBenchEditor starts `starter acp` and initializes it, as
// startEditor does, for a benchmark; every permission request is allowed.
func startBenchEditor(b *testing.B, env []string) *benchEditor {
	b.Helper()
	cmd := exec.Command(buildStarter(b), "acp")
	cmd.Env = append(append(os.Environ(), "HOME="+b.TempDir()), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	require.NoError(b, err)
	out, err := cmd.StdoutPipe()
	require.NoError(b, err)
	e := &benchEditor{editor: &editor{cmd: cmd, in: in, errb: &bytes.Buffer{}, asks: make(chan acp.RequestPermissionRequest, 1024),
		answer: func(acp.RequestPermissionRequest) acp.PermissionOptionId { return "allow_once" }}}
	cmd.Stderr = e.errb
	require.NoError(b, cmd.Start())
	b.Cleanup(e.kill)
	e.conn = acp.NewClientSideConnection(e, in, out)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = e.conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
	require.NoError(b, err, "initialize; stderr: %s", e.errb)
	return e
}

// acpBenchSetup is the embedded server (SQLite file), in-process workers
// with h as their model, and the environment of a `starter` process.
func acpBenchSetup(b *testing.B, h demomodel.Handler, o app.Options) (client.Client, []string) {
	srv := testenv.StartServer(b, devserver.Options{DBFile: filepath.Join(b.TempDir(), "temporal.db"), UIPort: -1})
	c := testenv.Dial(b, srv)
	_, base := testenv.StartModel(b, h)
	testenv.StartWorkers(b, c, base, o)
	env := append([]string{"TEMPORAL_ADDRESS=" + srv.FrontendAddr(), "XDG_CONFIG_HOME=" + b.TempDir(), "XDG_STATE_HOME=" + testenv.StateDir(),
		"HOME=" + b.TempDir()}, testenv.ModelEnv(base)...)
	return c, append(env, tlsEnv(srv)...)
}

// streamed is a model that answers each message with a streamed reply
// and notes when each request arrived.
type streamed struct {
	mu      sync.Mutex
	arrived time.Time
	stream  bool // the last request asked for a stream
	reply   func(text string) demomodel.Reply
}

func (s *streamed) handle(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	s.mu.Lock()
	s.arrived, s.stream = time.Now(), req.Stream
	s.mu.Unlock()
	return s.reply(lastUser(req)), nil
}

func (s *streamed) lastArrival() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arrived
}

func (s *streamed) lastStreamed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream
}

func benchPrompt(b *testing.B, e *benchEditor, sid acp.SessionId, text string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := e.conn.Prompt(ctx, acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	require.NoError(b, err, "stderr: %s", e.errb)
	require.Equal(b, acp.StopReasonEndTurn, r.StopReason)
}

func newBenchSession(b *testing.B, e *benchEditor, ws string) acp.SessionId {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := e.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: ws, McpServers: []acp.McpServer{}})
	require.NoError(b, err)
	return s.SessionId
}

const (
	benchFirstDelay = 200 * time.Millisecond
	benchChunkDelay = 20 * time.Millisecond
)

// BenchmarkACPFirstChunk measures, per prompt, the time from the
// endpoint's first streamed token (its request's arrival + FirstDelay)
// to the editor's first agent_message_chunk, and from the endpoint's
// last token to that chunk (negative: streamed live; positive: the text
// came after the stream ended, from the journal). journal: the tests'
// in-process worker, which serves no stream to other processes, so
// `starter acp` has the journal only; served: the same worker with a
// stream server, as `go run ./worker` has (app.StartStreamServer), which
// `starter acp` relays (jobevents.Relay).
func BenchmarkACPFirstChunk(b *testing.B) {
	b.Run("journal", func(b *testing.B) { benchFirstChunk(b, app.Options{}) })
	b.Run("served", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		b.Cleanup(cancel)
		hub := app.NewStreamHub(func(string) string { return "" })
		srv, err := app.StartStreamServer(ctx, hub, func(string) string { return "" }, slog.New(slog.NewTextHandler(io.Discard, nil)))
		require.NoError(b, err)
		benchFirstChunk(b, app.Options{Stream: hub, StreamServer: srv})
	})
}

func benchFirstChunk(b *testing.B, o app.Options) {
	answer := strings.Repeat("streamed token ", 10) // 150 chars, 19 chunks of 8
	model := &streamed{reply: func(string) demomodel.Reply {
		return demomodel.Reply{Message: demomodel.Say(answer).Message, ChunkSize: 8, FirstDelay: benchFirstDelay, ChunkDelay: benchChunkDelay}
	}}
	_, env := acpBenchSetup(b, model.handle, o)
	e := startBenchEditor(b, env)
	sid := newBenchSession(b, e, testenv.Workspace(b))
	benchPrompt(b, e, sid, "warm up")
	streamLen := benchFirstDelay + time.Duration((len(answer)+7)/8-1)*benchChunkDelay
	var overFirst, overLast []time.Duration
	var chunks int
	b.ResetTimer()
	for i := range b.N {
		e.takeChunks()
		benchPrompt(b, e, sid, fmt.Sprintf("prompt %d", i))
		got := e.takeChunks()
		require.NotEmpty(b, got)
		require.True(b, model.lastStreamed(), "the worker did not ask the endpoint for a stream")
		chunks += len(got)
		overFirst = append(overFirst, got[0].Sub(model.lastArrival().Add(benchFirstDelay)))
		overLast = append(overLast, got[0].Sub(model.lastArrival().Add(streamLen)))
	}
	b.StopTimer()
	reportSigned(b, "first-token-to-chunk-", overFirst)
	reportSigned(b, "last-token-to-chunk-", overLast)
	b.ReportMetric(float64(chunks)/float64(b.N), "chunks/prompt")
}

// reportSigned reports the median of d (which may be negative) in ms.
func reportSigned(b *testing.B, prefix string, d []time.Duration) {
	sorted := slices.Clone(d)
	slices.Sort(sorted)
	med := sorted[len(sorted)/2]
	b.ReportMetric(float64(med.Microseconds())/1000, "ms/"+prefix+"median")
}

// BenchmarkACPPromptVsSay measures a message's round trip (sent → the
// job's answer back) on one job, interleaved: through an attached
// `starter acp` (session/prompt → its stopReason) and through a `starter
// say` process (start → exit, it prints the answer).
func BenchmarkACPPromptVsSay(b *testing.B) {
	model := &streamed{reply: func(text string) demomodel.Reply { return demomodel.Say("re: " + text) }}
	_, env := acpBenchSetup(b, model.handle, app.Options{})
	e := startBenchEditor(b, env)
	sid := newBenchSession(b, e, testenv.Workspace(b))
	starter := buildStarter(b)
	say := func(text string) time.Duration {
		cmd := exec.Command(starter, "say", string(sid), text)
		cmd.Env = append(os.Environ(), env...)
		at := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(at)
		require.NoError(b, err, "%s", out)
		require.Contains(b, string(out), "re: "+text)
		return d
	}
	prompt := func(text string) time.Duration {
		at := time.Now()
		benchPrompt(b, e, sid, text)
		return time.Since(at)
	}
	benchPrompt(b, e, sid, "warm up")
	say("warm up say")
	var viaACP, viaSay []time.Duration
	b.ResetTimer()
	for i := range b.N {
		viaACP = append(viaACP, prompt(fmt.Sprintf("acp %d", i)))
		viaSay = append(viaSay, say(fmt.Sprintf("say %d", i)))
	}
	b.StopTimer()
	reportLatency(b, "acp-", viaACP)
	reportLatency(b, "say-", viaSay)
}

// BenchmarkACPLoad200Turns measures session/load of a job of 200 turns
// (200 messages, each answered with its reasoning, every 25th after a
// Glob call; longJob) that continued as new every 40 turns, in a fresh
// `starter acp` process: from the request to its response, and to the
// last turn's answer having arrived as agent_message_chunk. It reports
// the job's runs and the user turns the load replayed (all of them: the
// transcript for the earlier runs, the current run's journal for the
// rest).
func BenchmarkACPLoad200Turns(b *testing.B) {
	c, env := acpBenchSetup(b, turnsModel, app.Options{})
	ws := testenv.Workspace(b)
	id := longJob(b, c, ws)
	st, err := testenv.Status(c, id)
	require.NoError(b, err)
	require.GreaterOrEqual(b, st.Runs, 1, "the job continued as new")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	last := fmt.Sprintf("re: turn %d", loadTurns-1)
	replayed := 0 // the user turns the last load replayed
	load := func() (time.Duration, time.Duration) {
		e := startBenchEditor(b, env)
		defer e.kill()
		at := time.Now()
		_, err := e.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: acp.SessionId(id), Cwd: ws, McpServers: []acp.McpServer{}})
		resp := time.Since(at)
		require.NoError(b, err, "stderr: %s", e.errb)
		for {
			ups, _ := e.seen()
			if r := replayOf(ups); slices.Contains(r.agent, last) {
				d := time.Since(at)
				replayed = len(r.users)
				return resp, d
			}
			require.Less(b, time.Since(at), time.Minute, "the last answer never arrived")
			time.Sleep(time.Millisecond)
		}
	}
	load()
	var toResp, toLast []time.Duration
	b.ResetTimer()
	for range b.N {
		r, l := load()
		toResp, toLast = append(toResp, r), append(toLast, l)
	}
	b.StopTimer()
	require.Equal(b, loadTurns, replayed, "every user turn replayed")
	reportLatency(b, "response-", toResp)
	reportLatency(b, "last-answer-", toLast)
	b.ReportMetric(float64(replayed), "turns-replayed")
	b.ReportMetric(float64(st.Runs+1), "runs")
}
