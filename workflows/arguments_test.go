package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
)

// A call whose arguments the tool would refuse is refused before anyone is
// asked: no approval is pending at any point, nothing runs, the model is
// told exactly what is wrong, and the audit names the layer. Nothing the
// model adds to Bash's arguments turns the sandbox off or widens it, in any
// mode: the field never reaches the tool.
func TestInvalidArgumentsAreRefusedBeforeAnyoneIsAsked(t *testing.T) {
	for _, mode := range []approval.Mode{approval.ModeDefault, approval.ModeAcceptEdits, approval.ModeBypass} {
		t.Run(string(mode), func(t *testing.T) {
			h := newHarness(t, demomodel.Script(
				demomodel.Calls(
					call("w_unknown", "Write", map[string]any{"file_path": "a.txt", "content": "x", "mode": "0777"}),
					call("w_type", "Write", map[string]any{"file_path": "b.txt", "content": 7}),
					call("b_sandbox", "Bash", map[string]any{"command": "touch c.txt", "dangerouslyDisableSandbox": true}),
					call("b_network", "Bash", map[string]any{"command": "touch d.txt", "sandbox": map[string]any{"network": map[string]any{"allowedDomains": []string{"*"}}}}),
					rawCall("b_alias", "Bash", `{"command":"echo hi","COMMAND":"touch e.txt"}`),
					rawCall("b_twice", "Bash", `{"command":"echo hi","command":"touch f.txt"}`),
				),
				demomodel.Say("done"),
			))
			h.input.Mode = mode
			_, err := h.run()
			require.NoError(t, err)

			v, err := h.env.QueryWorkflow(EventsQuery, 0)
			require.NoError(t, err)
			var events []Event
			require.NoError(t, v.Get(&events))
			for _, e := range events {
				assert.NotEqual(t, "ask", e.Kind, "nobody is asked: %+v", e)
			}
			want := map[string]string{
				"w_unknown": `invalid arguments for Write: unknown field "mode": Write takes file_path, content; nobody was asked and nothing ran`,
				"w_type":    `invalid arguments for Write: field "content" must be a string, got a number; nobody was asked and nothing ran`,
				"b_sandbox": `invalid arguments for Bash: unknown field "dangerouslyDisableSandbox": Bash takes command, timeout, description; nobody was asked and nothing ran`,
				"b_network": `invalid arguments for Bash: unknown field "sandbox": Bash takes command, timeout, description; nobody was asked and nothing ran`,
				"b_alias":   `invalid arguments for Bash: unknown field "COMMAND" (field names are case-sensitive: "command"); nobody was asked and nothing ran`,
				"b_twice":   `invalid arguments for Bash: field "command" is given more than once; nobody was asked and nothing ran`,
			}
			results, decisions := h.toolResults(), h.decisions()
			for id, reason := range want {
				d, ok := denial(results[id])
				require.True(t, ok, "%s: the model gets a denial, got %q", id, results[id])
				assert.Equal(t, reason, d.Reason, id)
				assert.Equal(t, string(approval.LayerRules), d.Layer, id)
				assert.Contains(t, results[id], `"required":"valid arguments: a JSON object with the tool's parameters"`, id)
				rec := decisions[id]
				assert.Equal(t, approval.Deny, rec.Decision, id)
				assert.Equal(t, approval.LayerRules, rec.Layer, id)
				assert.Equal(t, reason, rec.Reason, id)
				assert.Empty(t, rec.Approver, "%s: no person answered", id)
			}
			for _, f := range []string{"a.txt", "b.txt", "c.txt", "d.txt", "e.txt", "f.txt"} {
				assert.Empty(t, h.file(f), "%s was not written", f)
			}
		})
	}
}

// A valid call next to an invalid one is asked about as before: the check
// refuses only what the tool would.
func TestValidArgumentsStillAsk(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("ok", "Write", map[string]any{"file_path": "a.txt", "content": "x"})),
		demomodel.Say("done"),
	))
	h.signalAt(time.Second, "ok", "allow")
	_, err := h.run()
	require.NoError(t, err)
	rec := h.decisions()["ok"]
	assert.Equal(t, approval.Allow, rec.Decision)
	assert.Equal(t, approval.LayerHuman, rec.Layer)
	assert.Equal(t, "x", h.file("a.txt"))
}

// A hook that rewrites a call into arguments the tool would refuse (here
// asking for the sandbox off) is refused at the hook layer, before anyone
// is asked.
func TestHookRewriteIntoInvalidArgumentsIsRefused(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("b", "Bash", map[string]any{"command": "touch x.txt"})),
		demomodel.Say("refused"),
	), withSettings(settingsWithHook("Bash", "rewrite.sh")))
	hookScript(h, "rewrite.sh", `cat >/dev/null; echo '{"decision":"ask","modifiedInput":{"command":"touch x.txt","sandbox":false}}'`)
	_, err := h.run()
	require.NoError(t, err)
	d := h.decisions()["b"]
	assert.Equal(t, approval.Deny, d.Decision)
	assert.Equal(t, approval.LayerHook, d.Layer)
	assert.Equal(t, `the hook rewrote the input into invalid arguments for Bash: unknown field "sandbox": Bash takes command, timeout, description; nobody was asked and nothing ran`, d.Reason)
	assert.Empty(t, d.Approver)
	assert.Empty(t, h.file("x.txt"))
}
