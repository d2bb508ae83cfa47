package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/cli"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// recorded is a script that keeps every request it answered.
type recorded struct {
	mu   sync.Mutex
	reqs []openai.ChatCompletionRequest
	next demomodel.Handler
}

func (r *recorded) handle(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.next(req)
}

// turns are the request's messages of a role, by content.
func (r *recorded) turns(i int, role string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.reqs[i].Messages {
		if m.Role == role {
			out = append(out, m.Content)
		}
	}
	return out
}

func (r *recorded) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

// say sends a message to a waiting job and follows it to its answer;
// interrupt stops a job's work; end ends it; and say to the ended job
// continues it under its name, from its transcript.
func TestSayInterruptEndAndSayAgain(t *testing.T) {
	const task = "cli test: a conversation over several commands"
	release := make(chan struct{})
	model := &recorded{}
	script := demomodel.Script(
		demomodel.Say("FIRST answer"),
		demomodel.Say("SECOND answer"),
		demomodel.Say("THIRD answer"),
	)
	model.next = func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		if model.count() == 3 {
			// The third request hangs until the test lets it go: it is
			// the model call the interrupt stops.
			<-release
			return demomodel.Say("ABANDONED answer"), nil
		}
		return script(req)
	}
	c := jobEnv(t, task, model.handle)
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	defer letGo()
	ws := testenv.Workspace(t)
	code, out, errOut := runApp(t, context.Background(), "run", "--workspace", ws, "--id", "custos-cli-say", task)
	require.Equal(t, 0, code, errOut)
	id := "custos-cli-say"
	assert.Contains(t, out, "FIRST answer")
	assert.Contains(t, errOut, "waits for your next message: starter say "+id)

	code, out, errOut = runApp(t, context.Background(), "status", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "state:     waiting for a message")
	assert.Contains(t, out, `waiting:   for your next message since `)

	code, out, errOut = runApp(t, context.Background(), "say", id, "now", "the second")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "message 2 sent to "+id)
	assert.Contains(t, out, "SECOND answer")
	assert.Equal(t, []string{task, "now the second"}, model.turns(1, openai.ChatMessageRoleUser))

	// The third message's model call hangs; the interrupt stops it.
	code, _, errOut = runApp(t, context.Background(), "say", "--detach", id, "think hard")
	require.Equal(t, 0, code, errOut)
	require.Eventually(t, func() bool { return model.count() == 3 }, 30*time.Second, 50*time.Millisecond)
	code, out, errOut = runApp(t, context.Background(), "interrupt", id, "never", "mind")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, id+": stopped the model call; the model gets your text now")
	// The scripted endpoint answers one request at a time: the abandoned
	// one answers now, to an activity that no longer counts.
	letGo()
	require.Eventually(t, func() bool {
		st, err := testenv.Status(c, id)
		return err == nil && st.State == jobapi.PhaseWaitingMessage && st.LastAnswer == "THIRD answer"
	}, 30*time.Second, 50*time.Millisecond, "the model answered the interrupt's text")
	assert.Equal(t, []string{task, "now the second", "think hard", "never mind"}, model.turns(3, openai.ChatMessageRoleUser))
	assert.NotContains(t, model.turns(3, openai.ChatMessageRoleAssistant), "ABANDONED answer")

	code, out, errOut = runApp(t, context.Background(), "end", id, "--reason", "enough")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, id+" ended after 3 turns")
	res := testenv.Finished(t, c, id, time.Minute)
	assert.Equal(t, "ended", res.Reason)

	code, out, errOut = runApp(t, context.Background(), "interrupt", id)
	assert.NotEqual(t, 0, code, "an ended job has nothing to interrupt: %s", out)

	// The job has ended: say continues it from its transcript.
	script2 := demomodel.Script(demomodel.Say("FOURTH answer, after the end"))
	model.next = script2
	code, out, errOut = runApp(t, context.Background(), "say", id, "one more thing")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "job "+id+" had ended; it goes on in "+ws+" from its transcript")
	assert.Contains(t, out, "FOURTH answer, after the end")
	last := model.count() - 1
	assert.Equal(t, []string{task, "now the second", "think hard", "never mind", "one more thing"}, model.turns(last, openai.ChatMessageRoleUser),
		"the whole conversation, from the transcript")
	assert.Equal(t, []string{"FIRST answer", "SECOND answer", "THIRD answer"}, model.turns(last, openai.ChatMessageRoleAssistant))
	st, err := testenv.Status(c, id)
	require.NoError(t, err)
	assert.Equal(t, jobapi.PhaseWaitingMessage, st.State)
	recs := testenv.Audit(t, c, id)
	var events []string
	for _, r := range recs {
		if r.Event != "" {
			events = append(events, r.Event)
		}
	}
	assert.Contains(t, strings.Join(events, " "), "job-resumed")
}

// A job that reaches --max-tokens waits; status says so and how to go on;
// starter budget raises it and the job goes on.
func TestBudgetFromTheCommandLine(t *testing.T) {
	const task = "cli test: a job on a budget"
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("g1", "Glob", map[string]any{"pattern": "*"})),
		demomodel.Say("BUDGET answer"),
	))
	id := startDetached(t, testenv.Workspace(t), task, "--max-tokens", "1")
	require.Eventually(t, func() bool {
		st, err := testenv.Status(c, id)
		return err == nil && st.State == jobapi.PhaseWaitingBudget
	}, 30*time.Second, 50*time.Millisecond)
	code, out, errOut := runApp(t, context.Background(), "status", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "state:     waiting for a budget")
	assert.Contains(t, out, "of 1 for the job)")
	assert.Contains(t, out, "budget:    reached (the job's); raise it: starter budget "+id+" --tokens N")

	code, out, errOut = runApp(t, context.Background(), "budget", id, "--tokens", "-3")
	require.Equal(t, 0, code, errOut, "a negative value means: leave it")
	assert.Contains(t, out, "of 1 for the job")
	code, out, errOut = runApp(t, context.Background(), "budget", id, "--tokens", "1000000")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, id+": budget set;")
	assert.Contains(t, out, "of 1000000 for the job")
	res := testenv.Finished(t, c, id, time.Minute)
	assert.Equal(t, "BUDGET answer", res.Answer)
}

// starter tool: a person's own call, asked for at layer 5 like the
// model's, answered from another shell; inside a job, its result goes to
// the model with the next message; bad calls are refused before a job.
func TestToolCallOfYourOwn(t *testing.T) {
	const task = "cli test: a person's own calls"
	model := &recorded{next: demomodel.Script(demomodel.Say("TOOL first"), demomodel.Say("TOOL second"))}
	c := jobEnv(t, task, model.handle)
	ws := testenv.Workspace(t)

	for _, bad := range [][]string{
		{"tool", "Nope", `{}`},
		{"tool", "Bash", `not json`},
		{"tool", "Bash"},
	} {
		code, _, errOut := runApp(t, context.Background(), bad...)
		assert.Equal(t, 2, code, "%v: %s", bad, errOut)
	}

	out, errOut := &syncBuffer{}, &syncBuffer{}
	app := &cli.App{Stdin: strings.NewReader(""), Stdout: out, Stderr: errOut, Logger: testenv.Logger()}
	code := make(chan int, 1)
	go func() {
		code <- app.Main(context.Background(), []string{"tool", "--workspace", ws, "--by", "alice", "Bash", `{"command": "echo mine-and-approved"}`})
	}()
	var id string
	require.Eventually(t, func() bool {
		m := regexp.MustCompile(`job (custos-\S+) in`).FindStringSubmatch(errOut.String())
		if m != nil {
			id = m[1]
		}
		return id != "" && strings.Contains(out.String(), "decide with: starter approve "+id+" user_1")
	}, 30*time.Second, 50*time.Millisecond, "out: %s\nerr: %s", out, errOut)
	rc, _, stderr := runApp(t, context.Background(), "approve", id, "user_1", "--by", "bob")
	require.Equal(t, 0, rc, stderr)
	select {
	case rc = <-code:
	case <-time.After(60 * time.Second):
		t.Fatalf("tool did not return; output:\n%s", out.String())
	}
	require.Equal(t, 0, rc, errOut.String())
	assert.Contains(t, out.String(), "mine-and-approved")
	d := testenv.Decisions(testenv.Audit(t, c, id))["user_1"]
	assert.Equal(t, "alice", d.By, "the call is the person's")
	assert.Equal(t, "bob", d.Approver)

	// Inside a conversation.
	rc, _, stderr = runApp(t, context.Background(), "run", "--workspace", ws, "--id", "custos-cli-tool-job", task)
	require.Equal(t, 0, rc, stderr)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.md"), []byte("n"), 0o644))
	rc, toolOut, stderr := runApp(t, context.Background(), "tool", "custos-cli-tool-job", "Glob", `{"pattern": "*.md"}`)
	require.Equal(t, 0, rc, stderr)
	assert.Contains(t, stderr, "Glob allow at layer readonly (call user_1)")
	assert.Contains(t, toolOut, "notes.md", "the call's output is printed")
	rc, sayOut, stderr := runApp(t, context.Background(), "say", "custos-cli-tool-job", "did you see it?")
	require.Equal(t, 0, rc, stderr)
	assert.Contains(t, sayOut, "TOOL second")
	turns := model.turns(model.count()-1, openai.ChatMessageRoleUser)
	require.Len(t, turns, 3)
	assert.Contains(t, turns[1], "ran a tool call of their own, Glob *.md")
	assert.Contains(t, turns[1], "notes.md")
}
