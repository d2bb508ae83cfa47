package cli_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
)

func writeTo(id, path string) demomodel.Reply {
	return demomodel.Calls(demomodel.ToolCall(id, "Write", map[string]any{"file_path": path, "content": id + "\n"}))
}

// `starter approve --for` gives a grant: the next covered call runs
// without asking, audited with the grant; `starter grants` lists it,
// `starter revoke` ends it and the next covered call asks again.
func TestApproveForGrantsAndRevoke(t *testing.T) {
	const task = "cli test: a grant for half an hour, then revoked"
	c := jobEnv(t, task, demomodel.Script(
		writeTo("w1", "a.txt"),
		demomodel.Calls(
			demomodel.ToolCall("w2", "Write", map[string]any{"file_path": "b.txt", "content": "b\n"}),
			demomodel.ToolCall("w3", "Write", map[string]any{"file_path": "conf.json", "content": "{}\n"}),
		),
		writeTo("w4", "c.txt"),
		demomodel.Say("done"),
	))
	ws := testenv.Workspace(t)
	id := startDetached(t, ws, task, "--approval-timeout", "10m")
	testenv.WaitPending(t, c, id, "w1", pendingWait)

	code, out, errOut := runApp(t, context.Background(), "approve", id, "w1", "--for", "30m", "--rule", "Write(*.txt)", "--by", "alice@test")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "allowed Write a.txt, by alice@test via cli\n")
	assert.Contains(t, out, "granted: g1 allows Write(*.txt) in this job until ")
	assert.Contains(t, out, "revoke: starter revoke "+id+" g1\n")

	// w2 is covered and runs; w3 is not, and asks.
	testenv.WaitPending(t, c, id, "w3", pendingWait)
	st, err := testenv.Status(c, id)
	require.NoError(t, err)
	require.Len(t, st.Pending, 1, "only w3 waits: %+v", st.Pending)
	code, out, errOut = runApp(t, context.Background(), "grants", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "g1 allows Write(*.txt) in this job until ")
	assert.Contains(t, out, "given by alice@test via cli at ")
	assert.Contains(t, out, "used 1 times; revoke: starter revoke "+id+" g1")
	code, out, errOut = runApp(t, context.Background(), "status", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "grant:     g1 allows Write(*.txt) in this job until ")

	code, out, errOut = runApp(t, context.Background(), "revoke", id, "g1", "--by", "bob@test")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "revoked g1: it allowed Write(*.txt), given by alice@test via cli\n", out)
	code, out, errOut = runApp(t, context.Background(), "revoke", id, "g1")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, errOut, `not applied: no grant "g1" is live in this job`)
	code, out, errOut = runApp(t, context.Background(), "grants", id)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, id+": no live grants\n", out)

	code, _, errOut = runApp(t, context.Background(), "approve", id, "w3")
	require.Equal(t, 0, code, errOut)
	testenv.WaitPending(t, c, id, "w4", pendingWait)
	code, _, errOut = runApp(t, context.Background(), "deny", id, "w4")
	require.Equal(t, 0, code, errOut)
	testenv.Finished(t, c, id, time.Minute)

	dec := testenv.Decisions(testenv.Audit(t, c, id))
	require.NotNil(t, dec["w2"].Grant, "the audit names the grant: %+v", dec["w2"])
	assert.Equal(t, "g1", dec["w2"].Grant.ID)
	assert.Equal(t, "alice@test", dec["w2"].Approver)
	assert.Equal(t, approval.Allow, dec["w2"].Decision)
	assert.Nil(t, dec["w4"].Grant)
	assert.Equal(t, approval.Deny, dec["w4"].Decision)
}

// approve's grant flags refuse what cannot be a grant before asking the
// job.
func TestApproveGrantFlagErrors(t *testing.T) {
	jobEnv(t, "cli test: grant flag errors (no job runs)", demomodel.Script())
	const missing = "custos-no-such-job"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"for and until", []string{"approve", missing, "c", "--for", "1m", "--until", "eod"}, "give --for or --until, not both"},
		{"bad duration", []string{"approve", missing, "c", "--for", "soon"}, `--for "soon": want a positive duration`},
		{"negative duration", []string{"approve", missing, "c", "--for", "-1m"}, `want a positive duration`},
		{"bad until", []string{"approve", missing, "c", "--until", "tomorrowish"}, `--until "tomorrowish": want RFC 3339`},
		{"bad scope", []string{"approve", missing, "c", "--for", "1m", "--scope", "galaxy"}, `--scope "galaxy": want job or workspace`},
		{"scope alone", []string{"approve", missing, "c", "--scope", "workspace"}, "--scope and --rule go with --for or --until"},
		{"with always", []string{"approve", missing, "c", "--always", "--for", "1m"}, "go with approve (without --always)"},
		{"with deny", []string{"deny", missing, "c", "--for", "1m"}, "--for and --until go with approve"},
		{"revoke without a grant", []string{"revoke", missing}, "name exactly one grant"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runApp(t, context.Background(), tc.args...)
			assert.Equal(t, 2, code, "stdout %q stderr %q", out, errOut)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.want)
		})
	}
}

// The terminal prompt offers a grant of the rule Always would save: 'for
// 30m' allows the call and the next one the rule covers runs without a
// prompt; answers that cannot be a grant say why and ask again.
func TestPromptGivesAGrant(t *testing.T) {
	const task = "cli test: a grant from the terminal prompt"
	t.Setenv("USER", "tester")
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("p1", "Write", map[string]any{"file_path": "notes.txt", "content": "one\n"})),
		demomodel.Calls(demomodel.ToolCall("p2", "Write", map[string]any{"file_path": "notes.txt", "content": "two\n"})),
		demomodel.Say("FINAL: wrote notes.txt twice"),
	))
	ws := testenv.Workspace(t)
	id := "custos-cli-test-prompt-grant"
	term := startInteractive(t, "run", "--once", "--workspace", ws, "--id", id, "--approval-timeout", "10m", task)

	first := term.waitFor("(denied in ")
	assert.Contains(t, first, "or 'for 30m [workspace]' to also allow Write(notes.txt) for a while")
	term.waitFor("): ")
	for _, tc := range []struct{ line, says string }{
		{"f", "a grant is 'for DURATION' or 'for DURATION workspace'"},
		{"for soon", `"soon" is not a positive duration`},
		{"for 30m galaxy", `"galaxy" is not a scope: job or workspace`},
	} {
		term.typeLine(tc.line)
		again := term.waitFor("(denied in ")
		assert.Contains(t, again, tc.says, tc.line)
		term.waitFor("): ")
	}
	term.typeLine("for 30m")
	granted := term.waitFor("(revoke: starter revoke " + id + " g1)")
	assert.Contains(t, granted, "granted: g1 allows Write(notes.txt) in this job until ")

	select {
	case code := <-term.code:
		assert.Equal(t, 0, code, "stderr: %s", term.errOut.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("run did not return; output:\n%s", term.out.String())
	}
	out := term.out.String()
	assert.NotContains(t, out, "p2: waiting for approval", "p2 ran without a prompt")
	assert.Contains(t, out, "p2: allow by human tester (Write(notes.txt)): allowed by grant g1")
	dec := testenv.Decisions(testenv.Audit(t, c, id))
	require.NotNil(t, dec["p2"].Grant)
	assert.Equal(t, "tester", dec["p2"].Approver)
	assert.Equal(t, "terminal", dec["p2"].Grant.Channel)
}
