package cli_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/cli"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// syncBuffer is a bytes.Buffer safe to read while the App writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// terminal drives an interactive App the way a person does: it waits for a
// prompt to appear, then types a line.
type terminal struct {
	t      *testing.T
	out    *syncBuffer
	stdin  *io.PipeWriter
	seen   int // bytes of out already matched
	code   chan int
	errOut *syncBuffer
	cancel context.CancelFunc // Ctrl-C
}

func startInteractive(t *testing.T, args ...string) *terminal {
	t.Helper()
	r, w := io.Pipe()
	term := &terminal{t: t, out: &syncBuffer{}, errOut: &syncBuffer{}, stdin: w, code: make(chan int, 1)}
	app := &cli.App{Stdin: r, Stdout: term.out, Stderr: term.errOut, Interactive: true, Logger: testenv.Logger()}
	ctx, cancel := context.WithCancel(context.Background())
	term.cancel = cancel
	go func() { term.code <- app.Main(ctx, args) }()
	t.Cleanup(func() {
		cancel()
		_ = w.Close()
	})
	return term
}

// waitFor waits until the output after what was already matched contains s,
// and returns that new output.
func (term *terminal) waitFor(s string) string {
	term.t.Helper()
	var chunk string
	require.Eventually(term.t, func() bool {
		out := term.out.String()
		i := strings.Index(out[term.seen:], s)
		if i < 0 {
			return false
		}
		chunk = out[term.seen : term.seen+i+len(s)]
		term.seen += i + len(s)
		return true
	}, 30*time.Second, 50*time.Millisecond, "never printed %q; output so far:\n%s\nstderr:\n%s", s, term.out.String(), term.errOut.String())
	return chunk
}

func (term *terminal) typeLine(s string) {
	term.t.Helper()
	_, err := io.WriteString(term.stdin, s+"\n")
	require.NoError(term.t, err)
}

// `run` on a terminal prompts for each pending call with a countdown; v
// shows the input, y allows, n denies; the answer is printed and the
// terminal asks for the next message: one is answered in the same job, an
// empty line leaves the job waiting and says how to come back.
func TestInteractiveRun(t *testing.T) {
	const task = "cli test: interactive write then bash"
	t.Setenv("USER", "tester")
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("i_w", "Write", map[string]any{"file_path": "notes.txt", "content": "line one\nline two\n"})),
		demomodel.Calls(demomodel.ToolCall("i_b", "Bash", map[string]any{"command": "touch ran.txt"})),
		demomodel.Say("FINAL: wrote notes.txt, Bash was refused"),
		demomodel.Say("SECOND: the test is written"),
	))
	ws := testenv.Workspace(t)
	id := "custos-cli-test-interactive"
	term := startInteractive(t, "run", "--workspace", ws, "--id", id, task)

	first := term.waitFor("(denied in ")
	assert.Contains(t, first, "? Write notes.txt — allow?")
	assert.Contains(t, first, "allow? [y]es [n]o [a]lways [v]iew, or 'never'")
	term.waitFor("): ")
	term.typeLine("v")
	viewed := term.waitFor("(denied in ")
	assert.Contains(t, viewed, "    file_path: notes.txt\n    content:\n      │ line one\n      │ line two\n",
		"v shows the whole input, multi-line strings as blocks")
	assert.Contains(t, viewed, "? Write notes.txt — allow?", "the prompt comes back after v")
	term.waitFor("): ")
	term.typeLine("y")

	second := term.waitFor("(denied in ")
	assert.Regexp(t, `(?s)\[turn 2\] model: calls Bash\n.*i_b: waiting for approval: Bash: touch ran.txt\n    │ Commands:\n    │   touch ran.txt\n.*    │ Network: none\n\? Bash: touch ran.txt — allow\?`, second,
		"the turn that led to a call is shown before its prompt")
	term.waitFor("): ")
	term.typeLine("n")

	answered := term.waitFor("\n> ")
	assert.Contains(t, answered, "\nFINAL: wrote notes.txt, Bash was refused\n")
	term.typeLine("now add a test for it")
	followUp := term.waitFor("\n> ")
	assert.Contains(t, followUp, "\nSECOND: the test is written\n", "the follow-up is answered in the same job")
	term.typeLine("")

	var code int
	select {
	case code = <-term.code:
	case <-time.After(60 * time.Second):
		t.Fatalf("run did not return; output:\n%s", term.out.String())
	}
	out, errOut := term.out.String(), term.errOut.String()
	assert.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Equal(t, 1, strings.Count(out, "FINAL:"), "the answer is printed once:\n%s", out)
	assert.Contains(t, out, "[turn 3] model: final answer\n")
	assert.Contains(t, errOut, "custos: answered after 3 turns")
	assert.Contains(t, errOut, "custos: job "+id+" waits for your next message: starter say "+id)
	st, err := testenv.Status(c, id)
	require.NoError(t, err)
	assert.Equal(t, jobapi.PhaseWaitingMessage, st.State, "an empty line leaves the job waiting")
	assert.Equal(t, 2, st.Messages)

	var endOut, endErr string
	code, endOut, endErr = runApp(t, context.Background(), "end", id)
	require.Equal(t, 0, code, endErr)
	assert.Contains(t, endOut, id+" ended after 4 turns")
	res := testenv.Finished(t, c, id, time.Minute)
	assert.Equal(t, "ended", res.Reason)
	assert.Equal(t, "SECOND: the test is written", res.Answer)
	msgs := 0
	for _, r := range testenv.Audit(t, c, id) {
		if r.Event == "message" {
			msgs++
			assert.Equal(t, "tester", r.Approver)
			assert.Equal(t, "terminal", r.Channel)
		}
	}
	assert.Equal(t, 1, msgs, "the follow-up is audited with who and where")

	b, err := os.ReadFile(filepath.Join(ws, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "line one\nline two\n", string(b))
	assert.NoFileExists(t, filepath.Join(ws, "ran.txt"))
	dec := testenv.Decisions(testenv.Audit(t, c, id))
	assert.Equal(t, approval.Allow, dec["i_w"].Decision)
	assert.Equal(t, approval.LayerHuman, dec["i_w"].Layer)
	assert.Equal(t, approval.Deny, dec["i_b"].Decision)
	assert.Equal(t, approval.LayerHuman, dec["i_b"].Layer)
	assert.Equal(t, "tester", dec["i_b"].Approver)
	assert.Equal(t, "terminal", dec["i_b"].Channel)
	assert.Contains(t, out, "    i_w: allowed Write notes.txt, by "+"tester"+" via terminal\n", "the person learns their answer counted")
}

// The prompt's races: a line typed before a question answers nothing, a call
// decided elsewhere ends its prompt at once, and "a" learns a rule.
func TestInteractiveRaces(t *testing.T) {
	const task = "cli test: interactive races"
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("r_typeahead", "Write", map[string]any{"file_path": "typeahead.txt", "content": "x"})),
		demomodel.Calls(demomodel.ToolCall("r_elsewhere", "Write", map[string]any{"file_path": "elsewhere.txt", "content": "y"})),
		demomodel.Calls(demomodel.ToolCall("r_always", "Bash", map[string]any{"command": "echo learned"})),
		demomodel.Say("FINAL: races done"),
	))
	ws := testenv.Workspace(t)
	id := "custos-cli-test-races"
	term := startInteractive(t, "run", "--once", "--workspace", ws, "--id", id, task)

	// Typed ahead, before any question: must not approve r_typeahead (it
	// is a message for the job, or discarded if the question came first).
	term.typeLine("y")
	term.waitFor("? Write typeahead.txt")
	term.waitFor("): ")
	testenv.WaitPending(t, c, id, "r_typeahead", pendingWait)
	term.typeLine("n")

	// Decided by someone else while the prompt waits.
	second := term.waitFor("): ")
	require.Contains(t, second, "? Write elsewhere.txt")
	code, _, errOut := runApp(t, context.Background(), "approve", id, "r_elsewhere", "--by", "carol@cli")
	require.Equal(t, 0, code, errOut)
	term.waitFor("r_elsewhere was decided elsewhere")

	third := term.waitFor("): ")
	require.Contains(t, third, "? Bash: echo learned")
	term.typeLine("a")

	select {
	case code = <-term.code:
	case <-time.After(60 * time.Second):
		t.Fatalf("run did not return; output:\n%s", term.out.String())
	}
	assert.Equal(t, 0, code, "stderr: %s", term.errOut.String())
	assert.Contains(t, term.out.String(), "\nFINAL: races done\n")

	dec := testenv.Decisions(testenv.Audit(t, c, id))
	assert.Equal(t, approval.Deny, dec["r_typeahead"].Decision, "the typed-ahead y was discarded")
	assert.NoFileExists(t, filepath.Join(ws, "typeahead.txt"))
	assert.Equal(t, approval.Allow, dec["r_elsewhere"].Decision)
	assert.Equal(t, "carol@cli", dec["r_elsewhere"].Approver)
	assert.FileExists(t, filepath.Join(ws, "elsewhere.txt"))
	assert.Equal(t, approval.Allow, dec["r_always"].Decision)
	local, err := os.ReadFile(filepath.Join(ws, ".custos", "settings.local.json"))
	require.NoError(t, err, "always saves a rule")
	assert.Contains(t, string(local), "Bash(echo")
}

// `run` without a terminal follows the job without prompting and says how
// to decide each call from elsewhere.
func TestFollowNotInteractive(t *testing.T) {
	const task = "cli test: follow without a terminal"
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("f_w", "Write", map[string]any{"file_path": "f.txt", "content": "f"})),
		demomodel.Say("FINAL: followed"),
	))
	ws := testenv.Workspace(t)
	id := "custos-cli-test-follow"
	out, errOut := &syncBuffer{}, &syncBuffer{}
	app := &cli.App{Stdin: strings.NewReader("y\n"), Stdout: out, Stderr: errOut, Logger: testenv.Logger()}
	code := make(chan int, 1)
	go func() { code <- app.Main(context.Background(), []string{"run", "--workspace", ws, "--id", id, task}) }()

	hint := "decide with: starter approve " + id + " f_w   |   starter deny " + id + " f_w"
	require.Eventually(t, func() bool { return strings.Contains(out.String(), hint) },
		30*time.Second, 50*time.Millisecond, "no hint; output:\n%s", out.String())
	assert.NotContains(t, out.String(), "allow? [y]es", "no prompt without a terminal")
	st, err := testenv.Status(c, id)
	require.NoError(t, err)
	require.Len(t, st.Pending, 1, "stdin is not read without a terminal")

	rc, _, stderr := runApp(t, context.Background(), "deny", id, "f_w", "--reason", "from another shell")
	require.Equal(t, 0, rc, stderr)
	select {
	case rc = <-code:
	case <-time.After(60 * time.Second):
		t.Fatalf("run did not return; output:\n%s", out.String())
	}
	assert.Equal(t, 0, rc, errOut.String())
	assert.Contains(t, out.String(), "f_w: deny by human")
	assert.True(t, strings.HasSuffix(out.String(), "\nFINAL: followed\n"), "the answer comes last:\n%s", out.String())
}

// Ctrl-C at a prompt stops following; the job keeps waiting on the server.
func TestInteractiveInterrupt(t *testing.T) {
	const task = "cli test: interrupt at the prompt"
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("x_w", "Write", map[string]any{"file_path": "x.txt", "content": "x"})),
		demomodel.Say("FINAL: resumed"),
	))
	ws := testenv.Workspace(t)
	id := "custos-cli-test-interrupt"
	term := startInteractive(t, "run", "--once", "--workspace", ws, "--id", id, task)
	term.waitFor("? Write x.txt")
	term.cancel()
	select {
	case code := <-term.code:
		assert.Equal(t, 0, code)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after the interrupt")
	}
	assert.Contains(t, term.errOut.String(), "custos: stopped following; the job goes on. Resume with: starter follow "+id)
	testenv.WaitPending(t, c, id, "x_w", pendingWait)

	code, _, errOut := runApp(t, context.Background(), "approve", id, "x_w")
	require.Equal(t, 0, code, errOut)
	res := testenv.Finished(t, c, id, time.Minute)
	assert.Equal(t, "FINAL: resumed", res.Answer)
}
