package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/jobevents"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// editor is an ACP client (the SDK's client side) driving one `starter
// acp` process over its stdin and stdout, as an editor does.
type editor struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	conn *acp.ClientSideConnection
	errb *bytes.Buffer

	mu      sync.Mutex
	updates []acp.SessionNotification
	asks    chan acp.RequestPermissionRequest
	answer  func(acp.RequestPermissionRequest) acp.PermissionOptionId // "": never answer (wait until cancelled)
	misused []string                                                  // fs/* or terminal/* calls: never expected
}

func startEditor(t *testing.T, env []string, answer func(acp.RequestPermissionRequest) acp.PermissionOptionId) *editor {
	t.Helper()
	cmd := exec.Command(buildStarter(t), "acp")
	cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir()), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	e := &editor{t: t, cmd: cmd, in: in, errb: &bytes.Buffer{}, asks: make(chan acp.RequestPermissionRequest, 16), answer: answer}
	cmd.Stderr = e.errb
	require.NoError(t, cmd.Start())
	t.Cleanup(e.kill)
	e.conn = acp.NewClientSideConnection(e, in, out)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	init, err := e.conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true}})
	require.NoError(t, err, "initialize; stderr: %s", e.errb)
	require.True(t, init.AgentCapabilities.LoadSession)
	require.True(t, init.AgentCapabilities.PromptCapabilities.EmbeddedContext)
	require.EqualValues(t, 1, init.ProtocolVersion)
	return e
}

func (e *editor) kill() {
	if e.cmd.Process != nil {
		_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
		_, _ = e.cmd.Process.Wait()
	}
}

func (e *editor) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	e.asks <- p
	id := e.answer(p)
	if id == "" {
		<-ctx.Done()
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
	}
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.RequestPermissionOutcomeSelected{OptionId: id}}}, nil
}

func (e *editor) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	e.mu.Lock()
	e.updates = append(e.updates, n)
	e.mu.Unlock()
	return nil
}

func (e *editor) misuse(what string) error {
	e.mu.Lock()
	e.misused = append(e.misused, what)
	e.mu.Unlock()
	return fmt.Errorf("this editor refuses %s", what)
}

func (e *editor) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, e.misuse("fs/read_text_file")
}
func (e *editor) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, e.misuse("fs/write_text_file")
}
func (e *editor) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, e.misuse("terminal/create")
}
func (e *editor) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, e.misuse("terminal/kill")
}
func (e *editor) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, e.misuse("terminal/output")
}
func (e *editor) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, e.misuse("terminal/release")
}
func (e *editor) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, e.misuse("terminal/wait_for_exit")
}

// seen are the updates so far, and the fs/terminal calls.
func (e *editor) seen() ([]acp.SessionNotification, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]acp.SessionNotification(nil), e.updates...), append([]string(nil), e.misused...)
}

// transcript summarises the updates: the agent's text, the user's, and
// each tool call's kind and last status.
type transcript struct {
	agent, user string
	kinds       map[string]acp.ToolKind
	status      map[string]acp.ToolCallStatus
	diffs       map[string]*acp.ToolCallContentDiff
	text        map[string]string
	modes       []acp.SessionModeId
}

func summarise(ups []acp.SessionNotification) transcript {
	tr := transcript{kinds: map[string]acp.ToolKind{}, status: map[string]acp.ToolCallStatus{}, diffs: map[string]*acp.ToolCallContentDiff{}, text: map[string]string{}}
	content := func(id string, cs []acp.ToolCallContent) {
		for _, c := range cs {
			if c.Diff != nil {
				tr.diffs[id] = c.Diff
			}
			if c.Content != nil && c.Content.Content.Text != nil {
				tr.text[id] += c.Content.Content.Text.Text
			}
		}
	}
	for _, n := range ups {
		u := n.Update
		switch {
		case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
			tr.agent += u.AgentMessageChunk.Content.Text.Text
		case u.UserMessageChunk != nil && u.UserMessageChunk.Content.Text != nil:
			tr.user += u.UserMessageChunk.Content.Text.Text + "\n"
		case u.ToolCall != nil:
			id := string(u.ToolCall.ToolCallId)
			tr.kinds[id], tr.status[id] = u.ToolCall.Kind, u.ToolCall.Status
			content(id, u.ToolCall.Content)
		case u.ToolCallUpdate != nil:
			id := string(u.ToolCallUpdate.ToolCallId)
			if u.ToolCallUpdate.Status != nil {
				tr.status[id] = *u.ToolCallUpdate.Status
			}
			content(id, u.ToolCallUpdate.Content)
		case u.CurrentModeUpdate != nil:
			tr.modes = append(tr.modes, u.CurrentModeUpdate.CurrentModeId)
		}
	}
	return tr
}

// acpSetup is a server, an in-process worker with script as its model,
// and the environment a `starter acp` process needs to reach them.
func acpSetup(t *testing.T, script demomodel.Handler) (client.Client, []string) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	_, base := testenv.StartModel(t, script)
	testenv.StartWorkers(t, c, base, app.Options{})
	env := append([]string{"TEMPORAL_ADDRESS=" + srv.FrontendAddr(), "XDG_CONFIG_HOME=" + t.TempDir(), "XDG_STATE_HOME=" + testenv.StateDir()}, testenv.ModelEnv(base)...)
	return c, append(env, tlsEnv(srv)...)
}

func allowWrites(p acp.RequestPermissionRequest) acp.PermissionOptionId {
	if p.ToolCall.Locations != nil && strings.HasSuffix(p.ToolCall.Locations[0].Path, "yes.txt") {
		return "allow_once"
	}
	return "reject_once"
}

// A session is a job: session/new starts it, the prompt is its first message, one Write is allowed from the
// editor and one rejected, the turn's updates show both (a diff, the
// layer that denied), the answer streams as agent messages and the prompt
// ends end_turn; set_mode goes through the mode Update (audited); a
// second prompt while one runs, an unknown session and an image are
// refused with JSON-RPC errors; fs/* and terminal/* are never used.
func TestACPPromptAllowRejectAndMode(t *testing.T) {
	script := demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "yes.txt", "content": "allowed\n"})),
		demomodel.Calls(demomodel.ToolCall("w2", "Write", map[string]any{"file_path": "no.txt", "content": "rejected\n"})),
		demomodel.Reply{Message: demomodel.Say("wrote yes.txt; no.txt was refused").Message, ChunkSize: 8, ChunkDelay: 300 * time.Millisecond},
		demomodel.Say("second answer"),
	)
	c, env := acpSetup(t, script)
	ed := startEditor(t, env, allowWrites)
	ws := testenv.Workspace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	_, err := ed.conn.Prompt(ctx, acp.PromptRequest{SessionId: "nope", Prompt: []acp.ContentBlock{acp.TextBlock("hi")}})
	require.ErrorContains(t, err, "unknown session")
	_, err = ed.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: "relative/dir", McpServers: []acp.McpServer{}})
	require.ErrorContains(t, err, "absolute")

	sess, err := ed.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: ws, McpServers: []acp.McpServer{}})
	require.NoError(t, err)
	id := string(sess.SessionId)
	require.Len(t, sess.Modes.AvailableModes, 5)
	assert.Equal(t, acp.SessionModeId("default"), sess.Modes.CurrentModeId)

	_, err = ed.conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.ImageBlock("AAAA", "image/png")}})
	require.ErrorContains(t, err, "no images")

	type result struct {
		r   acp.PromptResponse
		err error
	}
	first := make(chan result, 1)
	go func() {
		r, err := ed.conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("write the files"),
			acp.ResourceBlock(acp.EmbeddedResourceResource{TextResourceContents: &acp.TextResourceContents{Uri: "file://" + ws + "/notes.md", Text: "a note"}})}})
		first <- result{r, err}
	}()
	<-ed.asks // the first call waits: a second prompt now is refused
	_, err = ed.conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("again")}})
	require.ErrorContains(t, err, "already has a prompt running")
	res := <-first
	require.NoError(t, res.err, "stderr: %s", ed.errb)
	assert.Equal(t, acp.StopReasonEndTurn, res.r.StopReason)

	ups, misused := ed.seen()
	tr := summarise(ups)
	assert.Empty(t, misused)
	assert.Contains(t, tr.agent, "wrote yes.txt; no.txt was refused")
	assert.Equal(t, acp.ToolKindEdit, tr.kinds["w1"])
	assert.Equal(t, acp.ToolCallStatusCompleted, tr.status["w1"])
	assert.Equal(t, acp.ToolCallStatusFailed, tr.status["w2"])
	require.NotNil(t, tr.diffs["w1"])
	assert.Equal(t, filepath.Join(ws, "yes.txt"), tr.diffs["w1"].Path)
	assert.Equal(t, "allowed\n", tr.diffs["w1"].NewText)
	assert.Contains(t, tr.text["w2"], "layer human")
	b, err := os.ReadFile(filepath.Join(ws, "yes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "allowed\n", string(b))
	assert.NoFileExists(t, filepath.Join(ws, "no.txt"))
	// The editor's attachment reached the model as context, in the first
	// message (session/new started the job without a task).
	tb, err := os.ReadFile(testenv.JobFiles(t, c, id).Transcript)
	require.NoError(t, err)
	assert.Contains(t, string(tb), "a note")
	assert.Contains(t, string(tb), "not instructions")
	assert.Equal(t, "", queryACPStatus(t, c, id).Task)

	_, err = ed.conn.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: sess.SessionId, ModeId: "acceptEdits"})
	require.NoError(t, err)
	assert.Equal(t, "acceptEdits", string(queryACPStatus(t, c, id).Mode))
	_, err = ed.conn.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: sess.SessionId, ModeId: "yolo"})
	require.ErrorContains(t, err, "unknown permission mode")

	r, err := ed.conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("and now?")}})
	require.NoError(t, err)
	assert.Equal(t, acp.StopReasonEndTurn, r.StopReason)
	ups, _ = ed.seen()
	tr = summarise(ups)
	assert.Contains(t, tr.agent, "second answer")
	assert.Contains(t, tr.modes, acp.SessionModeId("acceptEdits"))
	var audit []struct {
		Event, Channel string
	}
	v, err := c.QueryWorkflow(ctx, id, "", jobapi.AuditQuery)
	require.NoError(t, err)
	require.NoError(t, v.Get(&audit))
	var modeBy []string
	for _, a := range audit {
		if a.Event == "mode-changed" {
			modeBy = append(modeBy, a.Channel)
		}
	}
	assert.Equal(t, []string{"acp"}, modeBy)
}

func queryACPStatus(t *testing.T, c client.Client, id string) jobapi.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := jobevents.QueryStatus(ctx, c, id)
	require.NoError(t, err)
	return st
}

// session/cancel during a long command interrupts the job as `starter
// interrupt` does: the command is killed and the prompt returns
// cancelled within seconds, the job waiting for the next message.
func TestACPCancelDuringLongCommand(t *testing.T) {
	script := demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("b1", "Bash", map[string]any{"command": "sleep 120"})),
		demomodel.Say("after the interrupt"),
	)
	c, env := acpSetup(t, script)
	ed := startEditor(t, env, func(acp.RequestPermissionRequest) acp.PermissionOptionId { return "allow_once" })
	ws := testenv.Workspace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sess, err := ed.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: ws, McpServers: []acp.McpServer{}})
	require.NoError(t, err)
	done := make(chan acp.PromptResponse, 1)
	go func() {
		r, err := ed.conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("sleep")}})
		assert.NoError(t, err)
		done <- r
	}()
	require.Eventually(t, func() bool {
		ups, _ := ed.seen()
		return summarise(ups).status["b1"] == acp.ToolCallStatusInProgress
	}, 90*time.Second, 100*time.Millisecond, "b1 never ran; stderr: %s", ed.errb)
	time.Sleep(time.Second) // the command is running in the sandbox
	at := time.Now()
	require.NoError(t, ed.conn.Cancel(ctx, acp.CancelNotification{SessionId: sess.SessionId}))
	select {
	case r := <-done:
		assert.Equal(t, acp.StopReasonCancelled, r.StopReason)
		assert.Less(t, time.Since(at), 15*time.Second)
	case <-time.After(time.Minute):
		t.Fatalf("the prompt did not return after session/cancel; stderr: %s", ed.errb)
	}
	ups, _ := ed.seen()
	assert.Equal(t, acp.ToolCallStatusFailed, summarise(ups).status["b1"])
	st := queryACPStatus(t, c, string(sess.SessionId))
	assert.True(t, jobevents.WaitsForMessage(st), "state %s", st.State)
}

// The editor's process is killed while a call waits for it: the job goes
// on, the call is approved with the decide Update (starter approve), and
// a new `starter acp` answers session/load by replaying the conversation,
// what happened while detached included, with each call's final status.
func TestACPKilledAtPermissionThenLoad(t *testing.T) {
	script := demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "later.txt", "content": "approved elsewhere\n"})),
		demomodel.Say("done while you were away"),
	)
	c, env := acpSetup(t, script)
	ed := startEditor(t, env, func(acp.RequestPermissionRequest) acp.PermissionOptionId { return "" })
	ws := testenv.Workspace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sess, err := ed.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: ws, McpServers: []acp.McpServer{}})
	require.NoError(t, err)
	id := string(sess.SessionId)
	go func() {
		_, _ = ed.conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("write later.txt")}})
	}()
	select {
	case p := <-ed.asks:
		assert.Equal(t, acp.ToolCallId("w1"), p.ToolCall.ToolCallId)
		var ids []acp.PermissionOptionId
		for _, o := range p.Options {
			ids = append(ids, o.OptionId)
		}
		assert.Equal(t, []acp.PermissionOptionId{"allow_once", "allow_always", "reject_once", "reject_always"}, ids)
	case <-time.After(90 * time.Second):
		t.Fatalf("no permission request; stderr: %s", ed.errb)
	}
	ed.kill()
	_, err = c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: jobapi.DecideUpdate,
		Args: []any{jobapi.ApprovalDecision{CallID: "w1", Decision: "allow", By: "e2e", Channel: "cli"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return jobevents.WaitsForMessage(queryACPStatus(t, c, id)) }, time.Minute, 200*time.Millisecond)

	ed2 := startEditor(t, env, func(acp.RequestPermissionRequest) acp.PermissionOptionId { return "allow_once" })
	_, err = ed2.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: "custos-unknown", Cwd: ws, McpServers: []acp.McpServer{}})
	require.ErrorContains(t, err, "unknown session")
	load, err := ed2.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: sess.SessionId, Cwd: ws, McpServers: []acp.McpServer{}})
	require.NoError(t, err, "stderr: %s", ed2.errb)
	assert.Equal(t, acp.SessionModeId("default"), load.Modes.CurrentModeId)
	ups, misused := ed2.seen()
	tr := summarise(ups)
	assert.Empty(t, misused)
	assert.Contains(t, tr.user, "write later.txt")
	assert.Equal(t, acp.ToolCallStatusCompleted, tr.status["w1"])
	assert.Contains(t, tr.agent, "done while you were away")
	b, err := os.ReadFile(filepath.Join(ws, "later.txt"))
	require.NoError(t, err)
	assert.Equal(t, "approved elsewhere\n", string(b))
}

// acpx (npm, a headless ACP client) runs one prompt through `starter acp`:
// --approve-all answers the Write's permission request from the editor
// side, its JSON output carries the answer, and the file is written.
func TestACPAcpxExec(t *testing.T) {
	acpx, err := exec.LookPath("acpx")
	require.NoError(t, err, "acpx is needed (make deps installs it: npm install -g acpx)")
	script := demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "acpx.txt", "content": "from acpx\n"})),
		demomodel.Say("acpx wrote the file"),
	)
	_, env := acpSetup(t, script)
	ws := testenv.Workspace(t)
	cmd := exec.Command(acpx, "--agent", buildStarter(t)+" acp", "--cwd", ws, "--approve-all", "--format", "json", "--timeout", "120", "exec", "write acpx.txt")
	cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir()), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "stdout: %s\nstderr: %s", &out, &errb)
	assert.Contains(t, out.String(), "acpx wrote the file")
	b, err := os.ReadFile(filepath.Join(ws, "acpx.txt"))
	require.NoError(t, err)
	assert.Equal(t, "from acpx\n", string(b))
}
