package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
	"github.com/custos-dev/custos/workflows/subagent"
)

// subModel answers each job by its task (its first user message): the
// parent and each child have their own script; it records every request
// with when it came.
type subModel struct {
	mu      sync.Mutex
	scripts map[string]demomodel.Handler
	reqs    map[string][]openai.ChatCompletionRequest
	at      map[string][]time.Time
}

func newSubModel(scripts map[string]demomodel.Handler) *subModel {
	return &subModel{scripts: scripts, reqs: map[string][]openai.ChatCompletionRequest{}, at: map[string][]time.Time{}}
}

func (m *subModel) handle(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	task := ""
	for _, msg := range req.Messages {
		if msg.Role == openai.ChatMessageRoleUser {
			task = msg.Content
			break
		}
	}
	m.mu.Lock()
	m.reqs[task], m.at[task] = append(m.reqs[task], req), append(m.at[task], time.Now())
	h := m.scripts[task]
	m.mu.Unlock()
	if h == nil {
		return demomodel.Fail(500, "no script for "+task), nil
	}
	return h(req)
}

func (m *subModel) requests(task string) []openai.ChatCompletionRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), m.reqs[task]...)
}

// toolResults are the tool results of the job's last request, by call ID.
func (m *subModel) toolResults(task string) map[string]string {
	out := map[string]string{}
	reqs := m.requests(task)
	if len(reqs) == 0 {
		return out
	}
	for _, msg := range reqs[len(reqs)-1].Messages {
		if msg.Role == openai.ChatMessageRoleTool {
			out[msg.ToolCallID] = msg.Content
		}
	}
	return out
}

func subTask(id, description, prompt string) openai.ToolCall {
	return demomodel.ToolCall(id, "Task", map[string]any{"description": description, "prompt": prompt})
}

// userSettings is a user config dir whose settings.json holds s.
func userSettings(t testing.TB, s map[string]any) string {
	dir := t.TempDir()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "custos"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "custos", "settings.json"), b, 0o600))
	return dir
}

// Three Task calls in one answer on the real server: three child
// workflows, the parent's status lists them, a child's Write waits for a
// person and is approved with starter approve CHILD CALL, and the three
// answers come back as the calls' results; the child's audit names its
// parent.
func TestSubagentsThreeChildrenOneApprovedThroughStarter(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	m := newSubModel(map[string]demomodel.Handler{
		"split it": demomodel.Script(
			demomodel.Calls(subTask("a", "part A", "do A"), subTask("b", "part B", "do B"), subTask("c", "write c", "write c")),
			demomodel.Say("all done")),
		"do A": demomodel.Script(demomodel.Say("answer of A")),
		"do B": demomodel.Script(demomodel.Say("answer of B")),
		"write c": demomodel.Script(
			demomodel.Calls(demomodel.ToolCall("w", "Write", map[string]any{"file_path": "c.txt", "content": "C\n"})),
			demomodel.Say("wrote c.txt")),
	})
	_, base := testenv.StartModel(t, m.handle)
	testenv.StartWorkers(t, c, base, app.Options{UserConfigDir: userSettings(t, map[string]any{
		"permissions": map[string]any{"allow": []string{"Task"}}})})
	ws := testenv.Workspace(t)
	id := fmt.Sprintf("subagents-%d", time.Now().UnixNano())
	child := id + "-task-c"
	testenv.StartJob(t, c, id, jobapi.JobInput{Once: true, Task: "split it", Workspace: ws, ApprovalTimeout: 10 * time.Minute})
	testenv.WaitPending(t, c, child, "w", pendingWait)
	st, err := testenv.Status(c, id)
	require.NoError(t, err)
	var listed []string
	for _, ch := range st.Children {
		listed = append(listed, ch.ID)
	}
	assert.Contains(t, listed, child, "the parent's status lists the child that waits")
	cst, err := testenv.Status(c, child)
	require.NoError(t, err)
	require.NotNil(t, cst.Parent)
	assert.Equal(t, id, cst.Parent.Job)

	code, out, errOut := starterAt(t, srv, "status", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "subagent:  "+child+" (write c)")
	assert.Contains(t, out, "starter approve "+child+" w", "the parent's status shows how to answer the child's call")
	followed := make(chan string, 1)
	go func() { _, out, errOut := starterAt(t, srv, "follow", id); followed <- out + errOut }()
	require.Eventually(t, func() bool {
		st, err := testenv.Status(c, id)
		return err == nil && slices.ContainsFunc(st.Children, func(ch subagent.ChildInfo) bool { return len(ch.Asks) == 1 })
	}, time.Minute, 50*time.Millisecond, "the parent's status lists the child's waiting call")
	code, out, errOut = starterAt(t, srv, "approve", child, "w", "--by", "carol@test")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	res := testenv.Finished(t, c, id, 2*time.Minute)
	select {
	case out := <-followed:
		// The parent's terminal says which child waits, for what, and how
		// to answer it; then how it was answered.
		assert.Contains(t, out, "[subagent] subagent "+child+" (write c) waits for a person: call w Write c.txt — answer: starter approve "+child+" w (or deny)")
		assert.Contains(t, out, "[subagent] subagent "+child+" (write c): its call w Write c.txt allowed by carol@test")
	case <-time.After(time.Minute):
		t.Fatal("starter follow did not end with the job")
	}
	assert.Equal(t, "all done", res.Answer)
	got := m.toolResults("split it")
	assert.Contains(t, got["a"], "answer of A")
	assert.Contains(t, got["b"], "answer of B")
	assert.Contains(t, got["c"], "wrote c.txt")
	assert.Contains(t, got["c"], "Files it changed with Write or Edit: c.txt.")
	b, err := os.ReadFile(filepath.Join(ws, "c.txt"))
	require.NoError(t, err)
	assert.Equal(t, "C\n", string(b))
	recs := testenv.Audit(t, c, child)
	var of string
	for _, r := range recs {
		if r.Event == "subagent-of" {
			of = r.Reason
		}
	}
	assert.Contains(t, of, "subagent of job "+id)
	assert.Equal(t, "carol@test", testenv.Decisions(recs)["w"].Approver)
}

// The parent interrupted while its child runs a long command: the child's
// command is killed with its process tree, the child ends cancelled, and
// the parent's model gets the interrupt's text and a result saying the
// Task call was stopped, in seconds.
func TestSubagentInterruptKillsTheChildsCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sandbox")
	}
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	marker := fmt.Sprintf("sub-sleep-%d", time.Now().UnixNano())
	m := newSubModel(map[string]demomodel.Handler{
		"long one": demomodel.Script(demomodel.Calls(demomodel.ToolCall("s", "Bash",
			map[string]any{"command": "sh -c 'sleep 120; echo " + marker + "' && touch late.txt"}))),
	})
	m.scripts["run long"] = func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		if len(m.requests("run long")) == 1 {
			return demomodel.Calls(subTask("t", "long", "long one")), nil
		}
		return demomodel.Say("stopped, as you asked"), nil
	}
	_, base := testenv.StartModel(t, m.handle)
	testenv.StartWorkers(t, c, base, app.Options{})
	ws := testenv.Workspace(t)
	id := fmt.Sprintf("subint-%d", time.Now().UnixNano())
	child := id + "-task-t"
	testenv.StartJob(t, c, id, jobapi.JobInput{Task: "run long", Workspace: ws, Mode: approval.ModeBypass})
	require.Eventually(t, func() bool { return len(procsWith(marker)) > 0 }, pendingWait, 50*time.Millisecond,
		"the child's command never started")
	sent := time.Now()
	res := update[jobapi.InterruptResult](t, c, id, jobapi.InterruptUpdate, jobapi.Interrupt{Text: "stop now", By: "e2e"})
	assert.Equal(t, []string{"Task t"}, res.Stopped)
	require.Eventually(t, func() bool { return len(m.requests("run long")) >= 2 }, time.Minute, 20*time.Millisecond)
	took := time.Since(sent)
	assert.Less(t, took, 15*time.Second, "the parent's model is asked again in seconds")
	assert.Empty(t, procsWith(marker), "the child's command is killed with its process tree")
	reqs := m.requests("run long")
	last := reqs[1].Messages
	assert.Equal(t, "stop now", last[len(last)-1].Content)
	assert.Contains(t, m.toolResults("run long")["t"], "interrupted by e2e")
	desc, err := c.DescribeWorkflowExecution(t.Context(), child, "")
	require.NoError(t, err)
	assert.Equal(t, "Canceled", desc.WorkflowExecutionInfo.Status.String(), "the child ended cancelled")
	_, err = os.Stat(filepath.Join(ws, "late.txt"))
	assert.True(t, os.IsNotExist(err))
	t.Logf("interrupt to the parent's next model request: %s", took)
	_ = update[jobapi.EndResult](t, c, id, jobapi.EndUpdate, jobapi.End{By: "e2e"})
}
