package workflows

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
)

// The job's Read and Edit deny rules reach the sandbox: a command a person
// (or a rule) allowed still cannot read a Read-denied file or change an
// Edit-denied one, nor can Glob list the masked file; rules learned during
// the job count too.
func TestDenyRulesHoldInsideBash(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bwrap missing and CI is set")
		}
		t.Skip("bwrap not installed")
	}
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("g", "Glob", map[string]any{"pattern": "**/*"})),
		demomodel.Calls(call("b", "Bash", map[string]any{"command": `python3 -c "print(open('.env').read())"; python3 -c "print(open('conf/tls.pem').read())"; python3 -c "open('go.mod','w').write('pwned')"; echo x > notes.txt`})),
		demomodel.Calls(call("n", "Edit", map[string]any{"file_path": "notes.txt", "old_string": "x", "new_string": "y"})),
		demomodel.Calls(call("b2", "Bash", map[string]any{"command": `python3 -c "open('notes.txt','w').write('again')"`})),
		demomodel.Say("done"),
	), withSettings(`{"permissions": {"deny": ["Read(.env)", "Read(conf/**)", "Edit(go.mod)"]}}`))
	h.writeFile(".env", "KEY=topsecret")
	h.writeFile("conf/tls.pem", "PEM=topsecret")
	h.writeFile("go.mod", "module x\n")
	h.writeFile("notes.txt", "mine\n")
	h.signalWhenAsked("b", "allow")
	h.signalWhenAsked("n", "never") // Edit(notes.txt) is learned as a deny rule
	h.signalWhenAsked("b2", "allow")
	_, err := h.run()
	require.NoError(t, err)

	assert.Equal(t, approval.Allow, h.decisions()["b"].Decision)
	out := h.toolResults()["b"]
	assert.NotContains(t, out, "topsecret")
	assert.Contains(t, out, "Permission denied")
	assert.Equal(t, "module x\n", h.file("go.mod"))
	assert.NotContains(t, h.toolResults()["g"], ".env")
	assert.NotContains(t, h.toolResults()["g"], "conf/tls.pem")
	assert.Contains(t, h.toolResults()["g"], "go.mod")
	// The first command could write notes.txt ("x"); after the learned
	// Edit(notes.txt) deny, the second one cannot. (The writes go through
	// python, which the rule engine does not look into: the sandbox is the
	// wall here.)
	assert.Equal(t, approval.Allow, h.decisions()["b2"].Decision)
	assert.Equal(t, "x\n", h.file("notes.txt"), "the learned Edit deny holds inside the sandbox")
	assert.Contains(t, h.toolResults()["b2"], "Read-only file system")
}
