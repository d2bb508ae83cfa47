package workflows

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/workflows/subagent"
)

// byTask answers each job of a test by its task (the first user message):
// the parent's and each child's requests get their own script.
type byTask struct {
	mu      sync.Mutex
	scripts map[string]demomodel.Handler
	seen    map[string][]openai.ChatCompletionRequest
}

func newByTask(scripts map[string]demomodel.Handler) *byTask {
	return &byTask{scripts: scripts, seen: map[string][]openai.ChatCompletionRequest{}}
}

func taskOf(req openai.ChatCompletionRequest) string {
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleUser {
			return m.Content
		}
	}
	return ""
}

func (b *byTask) handle(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	task := taskOf(req)
	b.mu.Lock()
	b.seen[task] = append(b.seen[task], req)
	h := b.scripts[task]
	b.mu.Unlock()
	if h == nil {
		return demomodel.Fail(500, "no script for task "+task), nil
	}
	return h(req)
}

// requests are the model requests of the job whose task is task.
func (b *byTask) requests(task string) []openai.ChatCompletionRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), b.seen[task]...)
}

func taskCall(id, description, prompt string) openai.ToolCall {
	return call(id, api.TaskTool, map[string]any{"description": description, "prompt": prompt})
}

func offered(req openai.ChatCompletionRequest) []string {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Function.Name)
	}
	return names
}

const allowTask = `{"permissions": {"allow": ["Task"]}}`

// Three Task calls in one answer: three children, each a job of its own,
// whose answers come back as the three calls' results, in order.
func TestTaskThreeChildrenAnswer(t *testing.T) {
	m := newByTask(map[string]demomodel.Handler{
		"test task": demomodel.Script(
			demomodel.Calls(taskCall("a", "part A", "do A"), taskCall("b", "part B", "do B"), taskCall("c", "part C", "do C")),
			demomodel.Say("all done")),
		"do A": demomodel.Script(demomodel.Say("answer of A")),
		"do B": demomodel.Script(demomodel.Say("answer of B")),
		"do C": demomodel.Script(demomodel.Say("answer of C")),
	})
	h := newHarness(t, m.handle, withSettings(allowTask))
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "all done", res.Answer)
	got := h.toolResults()
	for _, c := range []string{"a", "b", "c"} {
		part := strings.ToUpper(c)
		assert.Contains(t, got[c], "Subagent default-test-workflow-id-task-"+c+" (part "+part+") answered:\n\nanswer of "+part)
		assert.Contains(t, got[c], "Files it changed with Write or Edit: none.")
	}
	assert.Contains(t, offered(m.requests("test task")[0]), api.TaskTool, "a job is offered Task")
	child := m.requests("do A")[0]
	assert.NotContains(t, offered(child), api.TaskTool, "a child starts no Task of its own")
	assert.Contains(t, child.Messages[0].Content, "You are a subagent of job default-test-workflow-id")
	assert.Equal(t, approval.LayerRules, h.decisions()["a"].Layer, "the allow rule Task allowed it")
	// The children's tokens count in the parent's usage: 4 model calls.
	assert.Equal(t, 5, res.Usage.ModelCalls)
}

// In default mode a Task call asks a person; in plan mode it runs, and the
// child stays in plan mode: its Write is refused.
func TestTaskAsksInDefaultModeAndStaysInPlanMode(t *testing.T) {
	m := newByTask(map[string]demomodel.Handler{
		"test task": demomodel.Script(demomodel.Calls(taskCall("a", "write it", "write x")), demomodel.Say("done")),
		"write x": demomodel.Script(
			demomodel.Calls(call("w", "Write", map[string]any{"file_path": "x.txt", "content": "x"})),
			demomodel.Say("could not write")),
	})
	h := newHarness(t, m.handle)
	h.input.Mode = approval.ModePlan
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	assert.Equal(t, approval.LayerMode, h.decisions()["a"].Layer)
	childResults := m.requests("write x")[1].Messages
	last := childResults[len(childResults)-1]
	assert.Contains(t, last.Content, "plan mode", "the child's Write was refused by plan mode")
	assert.Empty(t, h.file("x.txt"))
	assert.Contains(t, h.toolResults()["a"], "could not write")

	m2 := newByTask(map[string]demomodel.Handler{
		"test task": demomodel.Script(demomodel.Calls(taskCall("a", "x", "y")), demomodel.Say("done")),
	})
	h2 := newHarness(t, m2.handle)
	h2.signalWhenAsked("a", "deny")
	_, err = h2.run()
	require.NoError(t, err)
	d, ok := denial(h2.toolResults()["a"])
	require.True(t, ok, "default mode asked and the person's deny refused it")
	assert.Equal(t, "human", d.Layer)
	assert.Empty(t, m2.requests("y"), "no child ran")
}

// At most subagents.maxParallel children run; the others wait their turn.
// A child's waiting call is answered on the child (its own job ID), and
// the parent's status lists its children meanwhile; the child's Write is
// named in the result.
func TestTaskLimitAndChildApproval(t *testing.T) {
	child := func(file string) demomodel.Handler {
		return demomodel.Script(
			demomodel.Calls(call("w", "Write", map[string]any{"file_path": file, "content": file})),
			demomodel.Say("wrote "+file))
	}
	m := newByTask(map[string]demomodel.Handler{
		"test task": demomodel.Script(demomodel.Calls(taskCall("a", "A", "write a"), taskCall("b", "B", "write b")), demomodel.Say("done")),
		"write a":   child("a.txt"),
		"write b":   child("b.txt"),
	})
	h := newHarness(t, m.handle, withSettings(`{"permissions": {"allow": ["Task"]}, "subagents": {"maxParallel": 1}}`))
	var seen []Status
	var poll func()
	poll = func() {
		st := h.status()
		if len(st.Children) > 0 {
			seen = append(seen, st)
		}
		for _, c := range st.Children {
			if !c.Waiting {
				h.env.SignalWorkflowByID(c.ID, ApprovalSignal, ApprovalDecision{CallID: "w", Decision: "allow", By: "test"})
			}
		}
		h.env.RegisterDelayedCallback(poll, 500*time.Millisecond)
	}
	h.env.RegisterDelayedCallback(poll, 500*time.Millisecond)
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	assert.Equal(t, "a.txt", h.file("a.txt"))
	assert.Equal(t, "b.txt", h.file("b.txt"))
	got := h.toolResults()
	assert.Contains(t, got["a"], "Files it changed with Write or Edit: a.txt.")
	assert.Contains(t, got["b"], "Files it changed with Write or Edit: b.txt.")
	require.NotEmpty(t, seen)
	first := seen[0].Children
	require.Len(t, first, 2, "both children are listed")
	assert.False(t, first[0].Waiting)
	assert.True(t, first[1].Waiting, "the second waits its turn")
	assert.Equal(t, "default-test-workflow-id-task-b", first[1].ID)
}

// A subagent_type nobody defined is a clear result, not a failed job; an
// isolation the release lacks too.
func TestTaskUnknownSubagent(t *testing.T) {
	m := newByTask(map[string]demomodel.Handler{
		"test task": demomodel.Script(demomodel.Calls(
			call("a", api.TaskTool, map[string]any{"description": "d", "prompt": "p", "subagent_type": "nobody"})),
			demomodel.Say("done")),
	})
	h := newHarness(t, m.handle, withSettings(allowTask))
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	assert.Contains(t, h.toolResults()["a"], `unknown subagent_type "nobody"`)
	assert.Empty(t, m.requests("p"))
}

// A child that calls Task anyway is refused at layer 1.
func TestTaskChildCannotNest(t *testing.T) {
	m := newByTask(map[string]demomodel.Handler{
		"test task": demomodel.Script(demomodel.Calls(taskCall("a", "A", "nest")), demomodel.Say("done")),
		"nest":      demomodel.Script(demomodel.Calls(taskCall("n", "N", "inner")), demomodel.Say("refused")),
	})
	h := newHarness(t, m.handle, withSettings(allowTask))
	_, err := h.run()
	require.NoError(t, err)
	msgs := m.requests("nest")[1].Messages
	assert.Contains(t, msgs[len(msgs)-1].Content, "Task is not offered to this job")
	assert.Empty(t, m.requests("inner"))
}

func TestChildMode(t *testing.T) {
	for _, c := range []struct {
		parent approval.Mode
		want   string
		got    approval.Mode
	}{
		{approval.ModeDefault, "", approval.ModeDefault},
		{approval.ModePlan, "bypass", approval.ModePlan},
		{approval.ModeDefault, "acceptEdits", approval.ModeDefault},
		{approval.ModeAcceptEdits, "plan", approval.ModePlan},
		{approval.ModeBypass, "dontAsk", approval.ModeDontAsk},
		{approval.ModeDontAsk, "default", approval.ModeDontAsk},
		{approval.ModeDefault, "nonsense", approval.ModeDefault},
	} {
		assert.Equal(t, c.got, subagent.ChildMode(c.parent, c.want), "%s narrowed by %q", c.parent, c.want)
	}
}

// The parent interrupted while its child runs a long command: the child
// is cancelled, its command killed with its process tree (its transcript
// says so), and the parent's Task call comes back stopped, at once.
func TestTaskInterruptReachesTheChildsCommand(t *testing.T) {
	m := newByTask(map[string]demomodel.Handler{
		"test task": demomodel.Script(demomodel.Calls(taskCall("a", "long", "run long")), demomodel.Say("after")),
		"run long":  demomodel.Script(demomodel.Calls(call("s", "Bash", map[string]any{"command": "sleep 60; echo late > late.txt"}))),
	})
	h := conversing(newHarness(t, m.handle))
	h.input.Mode = approval.ModeBypass
	stop := h.updateAt(3*time.Second, InterruptUpdate, Interrupt{Text: "stop", By: "alice"})
	h.updateAt(time.Hour, EndUpdate, End{})
	began := time.Now()
	_, err := h.run()
	require.NoError(t, err)
	require.NoError(t, stop.err)
	assert.Less(t, time.Since(began), 55*time.Second, "the command did not run its 60 s")
	assert.Equal(t, []string{"Task a"}, stop.stop.Stopped)
	assert.Contains(t, h.toolResults()["a"], "interrupted by alice via temporal while it ran")
	childFiles := api.JobFilesIn(statedir.WorkspaceDirIn(h.stateDir, h.ws), "default-test-workflow-id-task-a")
	tr, err := os.ReadFile(childFiles.Transcript)
	require.NoError(t, err)
	assert.Contains(t, string(tr), "job canceled while it ran: the call was stopped before it finished (a command is killed with its process tree)", "the child's Bash was killed")
	assert.Empty(t, h.file("late.txt"))
}

// A subagent defined as a file: the Task tool lists it, and as that
// subagent a child is offered only its tools, in the mode its definition
// narrows to, with its instructions in the system prompt; a call to a tool
// it is not offered is refused.
func TestTaskDefinedSubagentHasFewerTools(t *testing.T) {
	m := newByTask(map[string]demomodel.Handler{
		"test task": demomodel.Script(demomodel.Calls(
			call("a", api.TaskTool, map[string]any{"description": "review", "prompt": "review it", "subagent_type": "reviewer"})),
			demomodel.Say("done")),
		"review it": demomodel.Script(
			demomodel.Calls(call("w", "Write", map[string]any{"file_path": "x.txt", "content": "x"})),
			demomodel.Say("reviewed")),
	})
	h := newHarness(t, m.handle, withSettings(allowTask))
	dir := filepath.Join(h.userConfigDir, "custos", "agents")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "reviewer.md"), []byte(
		"---\nname: reviewer\ndescription: Reviews code and reports problems\ntools: Read, Grep, Glob\nmode: plan\n---\nLook for bugs; change nothing.\n"), 0o600))
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "done", res.Answer)
	var taskDesc string
	for _, tl := range m.requests("test task")[0].Tools {
		if tl.Function.Name == api.TaskTool {
			taskDesc = tl.Function.Description
		}
	}
	assert.Contains(t, taskDesc, "- reviewer: Reviews code and reports problems")
	child := m.requests("review it")
	assert.Equal(t, []string{"Read", "Glob", "Grep"}, offered(child[0]), "only the definition's tools")
	assert.Contains(t, child[0].Messages[0].Content, "Look for bugs; change nothing.")
	last := child[1].Messages[len(child[1].Messages)-1]
	assert.Contains(t, last.Content, "this subagent is offered only Read, Grep, Glob")
	assert.Empty(t, h.file("x.txt"))
	assert.Contains(t, h.toolResults()["a"], "reviewed")
}
