package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
)

// hostileCommand hides what it does from a person reading it raw: an erase
// of the line and a carriage return, an OSC 8 hyperlink, a right-to-left
// override and a zero-width joiner.
const hostileCommand = "echo safe\x1b[2K\rrm -rf ~; printf '\x1b]8;;http://evil.example\x07click\x1b]8;;\x07'; echo \u202eabc; echo a\u200db"

// hostileShown is how the terminal shows it on one line.
const hostileShown = "echo safe⟨ESC⟩[2K⟨CR⟩rm -rf ~; printf '⟨ESC⟩]8;;http://evil.example⟨BEL⟩click⟨ESC⟩]8;;⟨BEL⟩'; echo ⟨U+202E⟩abc; echo a⟨U+200D⟩b"

// noRaw fails if the terminal was sent anything it would interpret.
func noRaw(t *testing.T, what, screen string) {
	t.Helper()
	for _, raw := range []string{"\x1b", "\r", "\x07", "\u202e", "\u200d"} {
		assert.NotContains(t, screen, raw, "%s sent %q raw to the terminal", what, raw)
	}
}

// What a person sees is what runs: the terminal prompt, its v view, status
// and watch show a command's escape sequences and invisible characters
// escaped, never sent to the terminal raw; a long command keeps its end.
func TestTerminalShowsCommandsEscaped(t *testing.T) {
	const task = "cli test: escapes at the prompt"
	long := "echo " + strings.Repeat("x", 300) + "; rm -rf ~/the-end"
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("h1", "Bash", map[string]any{"command": hostileCommand})),
		demomodel.Calls(demomodel.ToolCall("h2", "Bash", map[string]any{"command": long})),
		demomodel.Say("FINAL: refused"),
	))
	ws := testenv.Workspace(t)
	id := "custos-cli-test-escapes"
	term := startInteractive(t, "run", "--once", "--workspace", ws, "--id", id, task)

	first := term.waitFor("): ")
	assert.Contains(t, first, "h1: waiting for approval: Bash: "+hostileShown+"\n")
	assert.Contains(t, first, "    │ Command:\n    │   "+hostileShown+"\n    │ Commands:\n")
	assert.Contains(t, first, "    │   echo ⟨U+202E⟩abc\n    │   echo a⟨U+200D⟩b\n")
	assert.Contains(t, first, "? Bash: "+hostileShown+" — allow?")
	noRaw(t, "the prompt", first)

	// status, from another shell, while the prompt waits.
	code, out, errOut := runApp(t, context.Background(), "status", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "pending:   h1: Bash: "+hostileShown+" (denied in ")
	noRaw(t, "status", out)

	// watch without a terminal lists it with its preview.
	wctx, stop := context.WithTimeout(context.Background(), 4*time.Second)
	defer stop()
	code, out, errOut = runApp(t, wctx, "watch")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "h1: waiting for approval: Bash: "+hostileShown+"\n")
	assert.Contains(t, out, "    │   echo ⟨U+202E⟩abc\n")
	noRaw(t, "watch", out)

	term.typeLine("v")
	viewed := term.waitFor("): ")
	assert.Contains(t, viewed, "    command: "+hostileShown+"\n", "v shows the whole input, escaped")
	noRaw(t, "the v view", viewed)
	term.typeLine("n")

	second := term.waitFor("): ")
	assert.Contains(t, second, "h2: waiting for approval: Bash: echo xxx")
	assert.Regexp(t, "h2: waiting for approval: Bash: echo x+⟨… 229 characters left out …⟩x+; rm -rf ~/the-end\n", second, "the summary keeps the command's end")
	assert.Contains(t, second, "    │ Command:\n    │   "+long+"\n", "the preview shows it whole")
	term.typeLine("n")

	res := testenv.Finished(t, c, id, time.Minute)
	assert.Equal(t, "FINAL: refused", res.Answer)
}
