package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// buildStarter compiles ./starter once per test binary run.
func buildStarter(t testing.TB) string { return buildBinary(t, "../starter", "starter") }

// terminal is a tmux session: a real terminal, driven as a person would.
type terminal struct {
	t    *testing.T
	name string
}

func startTerminal(t *testing.T, env []string, argv ...string) *terminal {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is needed for the terminal test (.ci/run installs it)")
	}
	term := &terminal{t: t, name: fmt.Sprintf("custos-e2e-%d", time.Now().UnixNano())}
	cmdline := "env -i " + shellJoin(env) + " " + shellJoin(argv) + "; sleep 600"
	out, err := exec.Command("tmux", "new-session", "-d", "-s", term.name, "-x", "220", "-y", "60", cmdline).CombinedOutput()
	require.NoError(t, err, "tmux: %s", out)
	t.Cleanup(func() { _ = exec.Command("tmux", "kill-session", "-t", term.name).Run() })
	return term
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// screen is what the terminal shows, its whole scrollback; raw keeps the
// escape sequences the terminal was sent as tmux renders them.
func (term *terminal) screen(raw bool) string {
	args := []string{"capture-pane", "-p", "-J", "-S", "-", "-t", term.name}
	if raw {
		args = append(args, "-e")
	}
	out, err := exec.Command("tmux", args...).Output()
	require.NoError(term.t, err)
	return string(out)
}

// waitFor waits until the screen shows want n times.
func (term *terminal) waitFor(want string, n int, within time.Duration) string {
	term.t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := term.screen(false)
		if strings.Count(s, want) >= n {
			return s
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the terminal never showed %q %d times; it shows:\n%s", want, n, s)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (term *terminal) typeLine(s string) {
	require.NoError(term.t, exec.Command("tmux", "send-keys", "-t", term.name, "-l", s).Run())
	require.NoError(term.t, exec.Command("tmux", "send-keys", "-t", term.name, "Enter").Run())
}

// The terminal prompt, in a real terminal (tmux), shows a command's escape
// sequences as text and never lets them act on the screen, and an answer
// typed for one call never approves a later call the model gave the same ID.
func TestTerminalShowsWhatRunsAndBindsAnswers(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	// A title change, a screen clear and a hidden-text run around the
	// command, then a second command under the same call ID.
	tricky := "echo benign > a.txt \x1b]0;pwned\x07\x1b[2J\x1b[8m; touch HIDDEN\x1b[0m"
	_, base := testenv.StartModel(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("dup", "Bash", map[string]any{"command": tricky})),
		demomodel.Calls(demomodel.ToolCall("dup", "Bash", map[string]any{"command": "touch EVIL"})),
		demomodel.Say("done"),
	))
	testenv.StartWorkers(t, c, base, app.Options{})
	ws := testenv.Workspace(t)
	run := testenv.StartJob(t, c, "terminal-"+fmt.Sprint(time.Now().UnixNano()), jobapi.JobInput{
		Once: true, Task: "run them", Workspace: ws, ApprovalTimeout: 10 * time.Minute})

	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TERM=xterm-256color",
		"TEMPORAL_ADDRESS=" + srv.FrontendAddr(), "XDG_CONFIG_HOME=" + t.TempDir()}, tlsEnv(srv)...)
	term := startTerminal(t, env, buildStarter(t), "follow", run.GetID())

	term.waitFor("allow? [y]es", 1, pendingWait)
	raw := term.screen(true)
	for _, seq := range []string{"\x1b]0;pwned", "\x1b[2J", "\x1b[8m"} {
		assert.NotContains(t, raw, seq, "the command's escape sequence reached the terminal")
	}
	shown := term.screen(false)
	assert.Contains(t, shown, "⟨ESC⟩]0;pwned⟨BEL⟩⟨ESC⟩[2J⟨ESC⟩[8m; touch HIDDEN⟨ESC⟩[0m", "shown as text, the hidden part too")
	title, err := exec.Command("tmux", "display-message", "-p", "-t", term.name, "#{pane_title}").Output()
	require.NoError(t, err)
	assert.NotContains(t, string(title), "pwned", "the window title was not changed")

	term.typeLine("y")
	screen := term.waitFor("allow? [y]es", 2, pendingWait)
	assert.Contains(t, screen, "touch EVIL", "the second call has a prompt of its own")
	term.typeLine("n")
	testenv.Finished(t, c, run.GetID(), 2*time.Minute)

	assert.FileExists(t, filepath.Join(ws, "a.txt"), "the approved command ran")
	assert.NoFileExists(t, filepath.Join(ws, "EVIL"), "the answer for the first call did not approve the second")
	dec := testenv.Decisions(testenv.Audit(t, c, run.GetID()))
	require.Len(t, dec, 2, "two calls, two identities: %v", dec)
	var allowed, denied int
	for id, r := range dec {
		assert.Equal(t, approval.LayerHuman, r.Layer, id)
		switch r.Decision {
		case approval.Allow:
			allowed++
			assert.Equal(t, "dup", id)
		case approval.Deny:
			denied++
			assert.NotEqual(t, "dup", id)
		}
	}
	assert.Equal(t, 1, allowed)
	assert.Equal(t, 1, denied)
}
