package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/mcptest"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/jobevents"
	"github.com/custos-dev/custos/mcpservers"
	"github.com/custos-dev/custos/settingsfile"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// toolsSeen records the tools each model request offered.
type toolsSeen struct {
	mu    sync.Mutex
	tools [][]string
}

func (s *toolsSeen) handle(next demomodel.Handler) demomodel.Handler {
	return func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		var names []string
		for _, t := range req.Tools {
			if t.Function != nil {
				names = append(names, t.Function.Name)
			}
		}
		s.mu.Lock()
		s.tools = append(s.tools, names)
		s.mu.Unlock()
		return next(req)
	}
}

func (s *toolsSeen) first() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tools) == 0 {
		return nil
	}
	return s.tools[0]
}

// historyHolds says whether any event of job id's history (every run:
// inputs, memos, search attributes, signals, Updates, results) or its
// description holds secret.
func historyHolds(t *testing.T, c client.Client, id, secret string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	it := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		b, err := proto.Marshal(ev)
		require.NoError(t, err)
		n++
		if strings.Contains(string(b), secret) {
			return true
		}
	}
	require.Greater(t, n, 3, "the history was read")
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	b, err := proto.Marshal(d)
	require.NoError(t, err)
	return strings.Contains(string(b), secret)
}

// session/new starts the job at once (every channel knows it, waiting for
// its first message); the editor's stdio MCP server (the official memory
// server from npm) runs in the sandbox for that job, its tools offered to
// the model as mcp__memory__TOOL and a call asked of the editor and run,
// with the env the editor passed; that env's secret is nowhere in the
// workflow's history or the audit; the entries go when the job ends; a
// malformed entry is a JSON-RPC error naming it.
func TestACPSessionNewStartsJobWithEditorMCPServers(t *testing.T) {
	bin, err := exec.LookPath("mcp-server-memory")
	require.NoError(t, err, "mcp-server-memory is needed (make deps installs @modelcontextprotocol/server-memory)")
	seen := &toolsSeen{}
	script := seen.handle(demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("m1", "mcp__memory__create_entities", entity())),
		demomodel.Say("remembered"),
	))
	// The worker's state directory is the one starter acp finds
	// ($XDG_STATE_HOME/custos), as on one machine.
	xdg := t.TempDir()
	state := filepath.Join(xdg, "custos")
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	_, base := testenv.StartModel(t, script)
	testenv.StartWorkers(t, c, base, app.Options{StateDir: state})
	env := append([]string{"TEMPORAL_ADDRESS=" + srv.FrontendAddr(), "XDG_CONFIG_HOME=" + t.TempDir(), "XDG_STATE_HOME=" + xdg}, testenv.ModelEnv(base)...)
	env = append(env, tlsEnv(srv)...)
	ed := startEditor(t, env, func(acp.RequestPermissionRequest) acp.PermissionOptionId { return "allow_once" })
	ws := testenv.Workspace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	_, err = ed.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: ws, McpServers: []acp.McpServer{{Stdio: &acp.McpServerStdio{Name: "bad name", Command: bin}}}})
	require.ErrorContains(t, err, `mcpServers[0] (\"bad name\"): a server's name is letters`, "the entry is named")

	const secret = "sk-editor-3f9c1e7a5b"
	sess, err := ed.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: ws, McpServers: []acp.McpServer{{Stdio: &acp.McpServerStdio{
		Name: "memory", Command: bin, Args: []string{},
		Env: []acp.EnvVariable{{Name: "MEMORY_FILE_PATH", Value: "${HOME}/editor-memory.jsonl"}, {Name: "EDITOR_TOKEN", Value: secret}}}}}})
	require.NoError(t, err, "stderr: %s", ed.errb)
	id := string(sess.SessionId)

	// Before any prompt the job runs, waiting for its first message.
	st := queryACPStatus(t, c, id)
	assert.True(t, jobevents.WaitsForMessage(st), "state %s", st.State)
	assert.Equal(t, "", st.Task)
	assert.Equal(t, 0, st.Turn)
	assert.Empty(t, seen.first(), "the model was not asked")
	for args, want := range map[string]string{"status " + id: "waiting:   for its first message since", "jobs": "(waiting for its first message)"} {
		cmd := exec.Command(buildStarter(t), strings.Fields(args)...)
		cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir()), env...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "starter %s: %s", args, out)
		assert.Contains(t, string(out), want, "starter %s", args)
	}
	fi, err := os.Stat(mcpservers.EditorFile(state, id))
	require.NoError(t, err, "the entries are kept for the worker")
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	r, err := ed.conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("remember custos")}})
	require.NoError(t, err, "stderr: %s", ed.errb)
	assert.Equal(t, acp.StopReasonEndTurn, r.StopReason)
	assert.Contains(t, seen.first(), "mcp__memory__create_entities", "the editor's server's tools are offered to the model")
	assert.Contains(t, seen.first(), "mcp__memory__read_graph")
	ups, _ := ed.seen()
	tr := summarise(ups)
	assert.Equal(t, acp.ToolCallStatusCompleted, tr.status["m1"], "the call ran: %v", tr.text["m1"])
	assert.Contains(t, tr.agent, "remembered")
	// The server ran with the editor's env: it kept its graph where
	// MEMORY_FILE_PATH said, in its home of this job's own.
	homes, err := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(mcpservers.HomeOf(state, ws, "x"))), "editor.*.memory", "home", "editor-memory.jsonl"))
	require.NoError(t, err)
	require.Len(t, homes, 1, "the server wrote where the editor's env told it")
	b, err := os.ReadFile(homes[0])
	require.NoError(t, err)
	assert.Contains(t, string(b), "runs servers in a sandbox")

	// The secret is in the job's entry file only (the search finds what
	// history does hold: the tool's name).
	assert.True(t, historyHolds(t, c, id, "mcp__memory__create_entities"))
	assert.False(t, historyHolds(t, c, id, secret), "the editor's env value is in the workflow history")
	files := testenv.JobFiles(t, c, id)
	for _, f := range []string{files.Audit, files.Transcript} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.NotContains(t, string(b), secret, f)
	}

	// The job ends: its editor entries go.
	_, err = c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: jobapi.EndUpdate,
		Args: []any{jobapi.End{By: "e2e", Channel: "cli"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	var res jobapi.JobResult
	require.NoError(t, c.GetWorkflow(ctx, id, "").Get(ctx, &res))
	assert.NoFileExists(t, mcpservers.EditorFile(state, id), "the entries are removed when the job ends")
}

func entity() map[string]any {
	return map[string]any{"entities": []map[string]any{{"name": "custos", "entityType": "project", "observations": []string{"runs servers in a sandbox"}}}}
}

// A worker whose state directory is not the one starter acp wrote the
// editor's entries to (a worker on another machine) does not use them,
// and the editor is told which and why.
func TestACPEditorMCPServersOnAnotherHostAreNamed(t *testing.T) {
	c, env := acpSetup(t, demomodel.Script(demomodel.Say("no memory here")))
	// starter acp's state directory is its own ($XDG_STATE_HOME of a
	// machine of its own), not the worker's.
	env = append(env, "XDG_STATE_HOME="+t.TempDir())
	ed := startEditor(t, env, func(acp.RequestPermissionRequest) acp.PermissionOptionId { return "allow_once" })
	ws := testenv.Workspace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sess, err := ed.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: ws, McpServers: []acp.McpServer{{Stdio: &acp.McpServerStdio{
		Name: "memory", Command: "mcp-server-memory", Args: []string{}, Env: []acp.EnvVariable{}}}}})
	require.NoError(t, err, "stderr: %s", ed.errb)
	r, err := ed.conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("hello")}})
	require.NoError(t, err, "stderr: %s", ed.errb)
	assert.Equal(t, acp.StopReasonEndTurn, r.StopReason)
	ups, _ := ed.seen()
	var thoughts string
	for _, n := range ups {
		if u := n.Update.AgentThoughtChunk; u != nil && u.Content.Text != nil {
			thoughts += u.Content.Text.Text
		}
	}
	assert.Contains(t, thoughts, "the editor's MCP servers (memory) are not used: their entries are not on this worker's host")
	assert.Contains(t, summarise(ups).agent, "no memory here")
	assert.True(t, jobevents.WaitsForMessage(queryACPStatus(t, c, string(sess.SessionId))))
}

// A job that fails at its start (the workspace's settings cannot be
// read) makes session/new a JSON-RPC error saying why, at once, and the
// agent goes on.
func TestACPSessionNewOnBrokenSettingsSaysWhy(t *testing.T) {
	_, env := acpSetup(t, demomodel.Script(demomodel.Say("fine")))
	ed := startEditor(t, env, func(acp.RequestPermissionRequest) acp.PermissionOptionId { return "allow_once" })
	broken := testenv.Workspace(t)
	require.NoError(t, os.MkdirAll(filepath.Join(broken, ".custos"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(broken, ".custos", "settings.json"), []byte("{not json"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	at := time.Now()
	_, err := ed.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: broken, McpServers: []acp.McpServer{}})
	require.ErrorContains(t, err, "ended at its start")
	assert.Contains(t, err.Error(), "settings")
	assert.Less(t, time.Since(at), 30*time.Second, "not the start's one-minute timeout")
	sess, err := ed.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: testenv.Workspace(t), McpServers: []acp.McpServer{}})
	require.NoError(t, err, "the agent goes on; stderr: %s", ed.errb)
	r, err := ed.conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("hi")}})
	require.NoError(t, err)
	assert.Equal(t, acp.StopReasonEndTurn, r.StopReason)
}

// BenchmarkACPSessionNew measures session/new, which now starts the job
// and returns once it waits for its first message (its settings read):
// without MCP servers, and with one editor stdio server (its entry file
// written; the server starts with the first listing, not here).
func BenchmarkACPSessionNew(b *testing.B) {
	for _, servers := range []int{0, 1} {
		b.Run(map[int]string{0: "no-servers", 1: "one-editor-server"}[servers], func(b *testing.B) {
			xdg := b.TempDir()
			_, env := acpBenchSetup(b, demomodel.Script(), app.Options{StateDir: filepath.Join(xdg, "custos")})
			e := startBenchEditor(b, append(env, "XDG_STATE_HOME="+xdg))
			ws := testenv.Workspace(b)
			mcp := []acp.McpServer{}
			if servers == 1 {
				mcp = []acp.McpServer{{Stdio: &acp.McpServerStdio{Name: "memory", Command: "mcp-server-memory", Args: []string{},
					Env: []acp.EnvVariable{{Name: "TOKEN", Value: "x"}}}}}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			for range 3 { // warm up: the starter's connection, the worker's caches
				_, err := e.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: ws, McpServers: mcp})
				require.NoError(b, err, "stderr: %s", e.errb)
			}
			var took []time.Duration
			for b.Loop() {
				at := time.Now()
				_, err := e.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: ws, McpServers: mcp})
				took = append(took, time.Since(at))
				require.NoError(b, err, "stderr: %s", e.errb)
			}
			reportSigned(b, "session-new-", took)
		})
	}
}

// An editor's HTTP server: reached through the egress proxy (its host
// among the settings' allowed domains), the editor's headers on every
// request, none of them in the workflow's history.
func TestACPEditorHTTPServerWithHeaders(t *testing.T) {
	const secret = "Bearer tok-7d2e9a41c0"
	h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return mcptest.NewServer() }, nil)
	var gotAuth atomic.Value
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		gotAuth.Store(req.Header.Get("Authorization"))
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(web.Close)
	seen := &toolsSeen{}
	script := seen.handle(demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("e1", "mcp__web__echo", map[string]any{"text": "over http"})),
		demomodel.Say("echoed"),
	))
	user := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Dir(settingsfile.UserFile(user)), 0o755))
	require.NoError(t, os.WriteFile(settingsfile.UserFile(user),
		[]byte(`{"sandbox": {"network": {"allowedDomains": ["127.0.0.1"], "allowLocalBinding": true}}}`), 0o644))
	xdg := t.TempDir()
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	_, base := testenv.StartModel(t, script)
	testenv.StartWorkers(t, c, base, app.Options{StateDir: filepath.Join(xdg, "custos"), UserConfigDir: user})
	env := append([]string{"TEMPORAL_ADDRESS=" + srv.FrontendAddr(), "XDG_CONFIG_HOME=" + t.TempDir(), "XDG_STATE_HOME=" + xdg}, testenv.ModelEnv(base)...)
	ed := startEditor(t, append(env, tlsEnv(srv)...), func(acp.RequestPermissionRequest) acp.PermissionOptionId { return "allow_once" })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sess, err := ed.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: testenv.Workspace(t), McpServers: []acp.McpServer{{Http: &acp.McpServerHttpInline{
		Name: "web", Type: "http", Url: web.URL, Headers: []acp.HttpHeader{{Name: "Authorization", Value: secret}}}}}})
	require.NoError(t, err, "stderr: %s", ed.errb)
	r, err := ed.conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("echo it")}})
	require.NoError(t, err, "stderr: %s", ed.errb)
	assert.Equal(t, acp.StopReasonEndTurn, r.StopReason)
	assert.Contains(t, seen.first(), "mcp__web__echo")
	ups, _ := ed.seen()
	tr := summarise(ups)
	assert.Equal(t, acp.ToolCallStatusCompleted, tr.status["e1"])
	assert.Contains(t, tr.text["e1"], "echo: over http")
	assert.Equal(t, secret, gotAuth.Load(), "the editor's header reaches its server")
	assert.False(t, historyHolds(t, c, string(sess.SessionId), "tok-7d2e9a41c0"), "the editor's header is in the workflow history")
}
