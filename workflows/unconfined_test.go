package workflows

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/settingsfile"
)

// pathWithoutBwrap points the worker's PATH at a directory holding the
// tools the commands below need, and not bubblewrap, so sandbox.New finds
// no bwrap: the situation of a worker where it is not installed.
func pathWithoutBwrap(t *testing.T) {
	t.Helper()
	bin := t.TempDir()
	for _, tool := range []string{"bash", "sh", "prlimit", "cat", "touch", "id"} {
		p, err := exec.LookPath(tool)
		require.NoError(t, err, "the host needs %s for this test", tool)
		require.NoError(t, os.Symlink(p, filepath.Join(bin, tool)))
	}
	t.Setenv("PATH", bin)
}

// userSettings writes the user's own settings.json (not the workspace's)
// into the harness's user config dir, keeping the trust list.
func userSettings(t *testing.T, h *harness, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(settingsfile.UserFile(h.userConfigDir), []byte(content), 0o644))
	require.NoError(t, settingsfile.Trust(h.userConfigDir, h.ws))
}

func (h *harness) events() []Event {
	v, err := h.env.QueryWorkflow(EventsQuery, 0)
	require.NoError(h.t, err)
	var evs []Event
	require.NoError(h.t, v.Get(&evs))
	return evs
}

// A job on a worker without bubblewrap refuses Bash, whatever the rules and
// the mode say, with a message that says why and how to fix it; the first
// event says which backend is active. Other tools still work.
func TestUnconfinedBashRefusedByDefault(t *testing.T) {
	pathWithoutBwrap(t)
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(
			call("b", "Bash", map[string]any{"command": "echo ran > ran.txt"}),
			call("r", "Read", map[string]any{"file_path": "notes.md"}),
		),
		demomodel.Say("done"),
	), withSettings(`{"permissions": {"allow": ["Bash(echo:*)"]}}`))
	h.writeFile("notes.md", "hello")
	h.input.Mode = approval.ModeBypass
	_, err := h.run()
	require.NoError(t, err)

	d := h.decisions()["b"]
	assert.Equal(t, approval.Deny, d.Decision)
	assert.Equal(t, approval.LayerRules, d.Layer)
	assert.Equal(t, approval.RuleSandboxRequired, d.Rule)
	den, ok := denial(h.toolResults()["b"])
	require.True(t, ok, h.toolResults()["b"])
	for _, want := range []string{"bwrap not found in PATH", "install bubblewrap", "user namespaces", "allowUnsandboxed"} {
		assert.Contains(t, den.Reason, want, "the model (and the user) learn why and how to fix it")
	}
	assert.Empty(t, h.file("ran.txt"), "the command did not run")
	assert.Contains(t, h.toolResults()["r"], "hello", "Read does not need the sandbox")

	evs := h.events()
	require.NotEmpty(t, evs)
	assert.Equal(t, "sandbox", evs[0].Kind, "the first event names the backend")
	assert.Contains(t, evs[0].Text, "NONE, Bash is refused")
}

// With "sandbox": {"allowUnsandboxed": true} in the user's settings, every
// Bash call goes to a person, told it runs unconfined, even one an allow
// rule and bypass mode would let through; what the person allows runs,
// what they deny does not, and a deny rule still denies without asking.
func TestUnconfinedBashAsksEveryTime(t *testing.T) {
	pathWithoutBwrap(t)
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("a", "Bash", map[string]any{"command": "echo one > one.txt"})),
		demomodel.Calls(
			call("b", "Bash", map[string]any{"command": "echo two > two.txt"}),
			call("c", "Bash", map[string]any{"command": "curl http://example.com"}),
		),
		demomodel.Say("done"),
	), withSettings(`{"permissions": {"allow": ["Bash(echo:*)"], "deny": ["Bash(curl:*)"]}}`))
	userSettings(t, h, `{"sandbox": {"allowUnsandboxed": true}}`)
	h.input.Mode = approval.ModeBypass

	var asked []PendingAsk
	query := func() {
		st := h.status()
		asked = append(asked, st.Pending...)
	}
	h.env.RegisterDelayedCallback(query, 1*time.Second)
	h.signalAt(2*time.Second, "a", "allow")
	h.env.RegisterDelayedCallback(query, 3*time.Second)
	h.signalAt(4*time.Second, "b", "deny")
	_, err := h.run()
	require.NoError(t, err)

	ds := h.decisions()
	assert.Equal(t, approval.Allow, ds["a"].Decision)
	assert.Equal(t, approval.LayerHuman, ds["a"].Layer, "allowed by the person, not by the rule or the mode")
	assert.Equal(t, approval.Deny, ds["b"].Decision)
	assert.Equal(t, approval.LayerHuman, ds["b"].Layer)
	assert.Equal(t, approval.Deny, ds["c"].Decision)
	assert.Equal(t, "Bash(curl:*)", ds["c"].Rule, "a deny rule still denies, nobody is asked")

	require.Len(t, asked, 2, "both echo commands waited for a person: %+v", asked)
	for _, a := range asked {
		assert.Contains(t, a.Reason, "WITHOUT OS isolation", "the person is told the command runs unconfined")
	}
	assert.Equal(t, "one\n", h.file("one.txt"), "the approved command ran")
	assert.Contains(t, h.toolResults()["a"], "WITHOUT OS isolation", "and its result says so")
	assert.Empty(t, h.file("two.txt"), "the denied one did not")

	evs := h.events()
	require.NotEmpty(t, evs)
	assert.Equal(t, "sandbox", evs[0].Kind)
	assert.True(t, strings.Contains(evs[0].Text, "UNCONFINED") && strings.Contains(evs[0].Text, "asks a person"), evs[0].Text)
}
