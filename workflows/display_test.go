package workflows

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/demomodel"
)

// hostileCommand hides what it does from a person reading it raw: an erase
// of the line and a carriage return, an OSC 8 hyperlink, a right-to-left
// override and a zero-width joiner.
const hostileCommand = "echo safe\x1b[2K\rrm -rf ~; printf '\x1b]8;;http://evil.example\x07click\x1b]8;;\x07'; echo \u202eabc; echo a\u200db"

// hostileShown is how every channel shows it on one line.
const hostileShown = "echo safe⟨ESC⟩[2K⟨CR⟩rm -rf ~; printf '⟨ESC⟩]8;;http://evil.example⟨BEL⟩click⟨ESC⟩]8;;⟨BEL⟩'; echo ⟨U+202E⟩abc; echo a⟨U+200D⟩b"

// What a person sees is what runs: status (summary and preview) and the Web
// UI's current details show a command's escape sequences and invisible
// characters escaped, never raw, and its end is never cut off.
func TestPendingCallIsShownEscaped(t *testing.T) {
	long := "echo " + strings.Repeat("x", 300) + "; rm -rf ~/the-end"
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(
			call("b1", "Bash", map[string]any{"command": hostileCommand}),
			call("b2", "Bash", map[string]any{"command": long}),
		),
		demomodel.Say("done"),
	))
	var st Status
	var details string
	h.env.RegisterDelayedCallback(func() {
		st = h.status()
		details = h.currentDetails()
		h.env.SignalWorkflow(ApprovalSignal, ApprovalDecision{CallID: "b1", Decision: "deny", By: "test"})
		h.env.SignalWorkflow(ApprovalSignal, ApprovalDecision{CallID: "b2", Decision: "deny", By: "test"})
	}, 5*time.Second)
	_, err := h.run()
	require.NoError(t, err)
	require.Len(t, st.Pending, 2)
	p := st.Pending[0]
	assert.Equal(t, "Bash: "+hostileShown, p.Summary)
	// Its text, then the commands as the rule engine parsed them.
	assert.True(t, strings.HasPrefix(p.Preview, "Command:\n  "+hostileShown+"\nCommands:\n  echo safe⟨ESC⟩[2K"), p.Preview)
	assert.Contains(t, p.Preview, "\n  printf ⟨ESC⟩]8;;http://evil.example⟨BEL⟩click⟨ESC⟩]8;;⟨BEL⟩\n  echo ⟨U+202E⟩abc\n  echo a⟨U+200D⟩b\n")
	assert.True(t, strings.HasPrefix(st.Pending[1].Preview, "Command:\n  "+long+"\nCommands:\n"), "a long command is shown whole in the preview: %q", st.Pending[1].Preview)
	assert.True(t, strings.HasSuffix(st.Pending[1].Summary, "; rm -rf ~/the-end"), "the end of a long command is shown: %q", st.Pending[1].Summary)
	assert.Contains(t, st.Pending[1].Summary, "characters left out")
	assert.Contains(t, details, "**Bash `"+hostileShown+"`**")
	assert.Contains(t, details, "~~~~~~\nCommand:\n  "+hostileShown+"\nCommands:\n")
	for what, s := range map[string]string{"summary": p.Summary, "preview": p.Preview, "details": details} {
		for _, raw := range []string{"\x1b", "\r", "\x07", "\u202e", "\u200d"} {
			assert.NotContains(t, s, raw, "%s holds %q raw", what, raw)
		}
	}
	// The model's input stays as it was: it is what runs.
	assert.Contains(t, string(p.Input), `\u001b[2K\r`)
}
