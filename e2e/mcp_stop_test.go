package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/mcptest"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// hungMCP is a worker whose user settings name the test MCP server "t"
// (allowed by a rule), and a model that calls a tool that never answers
// and then answers: freeze (the whole server stops: it answers nothing any
// more) unless tool says another.
type hungMCP struct {
	c      client.Client
	ws     string
	server string // the server binary's name, unique to the test
	tool   string
	mu     sync.Mutex
	reqs   []openai.ChatCompletionRequest
	at     []time.Time // when each request arrived
}

func startHungMCP(t testing.TB) *hungMCP {
	t.Helper()
	h := &hungMCP{server: fmt.Sprintf("mcp-stop-%d", time.Now().UnixNano()), tool: "freeze"}
	srv := testenv.StartServer(t, devserver.Options{UIPort: -1})
	h.c = testenv.Dial(t, srv)
	_, base := testenv.StartModel(t, func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.reqs, h.at = append(h.reqs, req), append(h.at, time.Now())
		if len(h.reqs) == 1 {
			return demomodel.Calls(demomodel.ToolCall("f", "mcp__t__"+h.tool, map[string]any{})), nil
		}
		return demomodel.Say("stopped"), nil
	})
	user := t.TempDir()
	settings, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"t": map[string]any{"command": "./" + h.server}},
		"permissions": map[string]any{"allow": []string{"mcp__t"}}})
	require.NoError(t, os.MkdirAll(filepath.Join(user, "custos"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(user, "custos", "settings.json"), settings, 0o600))
	testenv.StartWorkers(t, h.c, base, app.Options{UserConfigDir: user})
	h.ws = testenv.Workspace(t)
	mcptest.Place(t, h.ws, h.server)
	return h
}

// start starts a conversing job and waits until its server is frozen in
// the call; it returns the job's id.
func (h *hungMCP) start(t testing.TB) string {
	t.Helper()
	h.mu.Lock()
	h.reqs, h.at = nil, nil
	h.mu.Unlock()
	id := fmt.Sprintf("mcp-stop-%d", time.Now().UnixNano())
	testenv.StartJob(t, h.c, id, jobapi.JobInput{Task: "use the server", Workspace: h.ws})
	if h.tool != "freeze" {
		waitRunning(t, h.c, id, "f")
		time.Sleep(300 * time.Millisecond) // the call is in the server now
		return id
	}
	require.Eventually(t, func() bool { return len(h.frozen()) > 0 }, pendingWait, 20*time.Millisecond,
		"the server never froze in the call")
	return id
}

// frozen are the pids of the test's server processes that are stopped.
func (h *hungMCP) frozen() []string {
	var out []string
	for _, p := range h.procs() {
		stat, err := os.ReadFile(filepath.Join("/proc", p, "stat"))
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " T") {
			out = append(out, p)
		}
	}
	return out
}

// procs are the pids of the test's server processes (and their bwrap).
func (h *hungMCP) procs() []string {
	var out []string
	for _, line := range procsWith(h.server) {
		pid, _, _ := strings.Cut(line, ":")
		out = append(out, pid)
	}
	return out
}

// alive says whether process pid still exists (and is not a zombie).
func alive(pid string) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || !strings.HasPrefix(string(stat[i+1:]), " Z")
}

// requests are the model's requests so far, and when each arrived.
func (h *hungMCP) requests() ([]openai.ChatCompletionRequest, []time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), h.reqs...), append([]time.Time(nil), h.at...)
}

// interrupt interrupts job id with text and returns when it was sent.
func (h *hungMCP) interrupt(t testing.TB, id string) (jobapi.InterruptResult, time.Time) {
	t.Helper()
	sent := time.Now()
	res := update[jobapi.InterruptResult](t, h.c, id, jobapi.InterruptUpdate, jobapi.Interrupt{Text: "stop that", By: "e2e"})
	return res, sent
}

// An interrupt while an MCP call waits on a server that answers nothing
// any more: the model's next request comes at once with the interrupt's
// text and a result saying the call was stopped, and the server is killed.
func TestMCPInterruptFreesAHungCall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sandbox")
	}
	h := startHungMCP(t)
	id := h.start(t)
	frozen := h.frozen()
	res, _ := h.interrupt(t, id)
	assert.Equal(t, []string{"mcp__t__freeze f"}, res.Stopped)
	require.Eventually(t, func() bool { r, _ := h.requests(); return len(r) >= 2 }, 30*time.Second, 20*time.Millisecond,
		"the model never got the interrupt's text")
	reqs, _ := h.requests()
	assert.Equal(t, "stop that", lastMessage(reqs[1]).Content)
	got := toolMessages(reqs[1:2])["f"]
	assert.Contains(t, got, "interrupted by e2e")
	assert.Contains(t, got, "stopped before the server \"t\" answered")
	assert.Contains(t, got, "may or may not have taken effect")
	// (The next turn's listing starts the server afresh: the frozen one
	// must be gone.)
	assert.Eventually(t, func() bool { return !slices.ContainsFunc(frozen, alive) }, 10*time.Second, 50*time.Millisecond,
		"the hung server outlived the interrupt")
	waitAnswer(t, h.c, id, "stopped", time.Minute)
	endJob(t, h.c, id)
}

// A job canceled while an MCP call waits on a hung server: the server is
// killed, and the job ends canceled.
func TestMCPCancelKillsAHungCallsServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sandbox")
	}
	h := startHungMCP(t)
	id := h.start(t)
	require.NoError(t, h.c.CancelWorkflow(context.Background(), id, ""))
	_, err := testenv.Result(h.c, id, time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "canceled")
	assert.Eventually(t, func() bool { return len(h.procs()) == 0 }, 10*time.Second, 50*time.Millisecond,
		"the hung server outlived the job")
}
