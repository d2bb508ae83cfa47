package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
)

// startDetached runs `run --detach --once` (these tests follow a job to its
// end) and returns the job ID it printed.
func startDetached(t *testing.T, ws, task string, extra ...string) string {
	t.Helper()
	args := append([]string{"run", "--detach", "--once", "--workspace", ws}, extra...)
	args = append(args, task)
	code, out, errOut := runApp(t, context.Background(), args...)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	id := strings.TrimSpace(out)
	require.Regexp(t, `^custos-\d{8}-\d{6}-[0-9a-f]{6}$`, id, "run --detach prints only the job ID")
	assert.Contains(t, errOut, "job "+id+" started in "+ws)
	assert.Contains(t, errOut, "using the Temporal server at "+shared.env.Server.FrontendAddr())
	return id
}

// A detached job with two pending writes: status lists both with the
// commands to decide them, approve and deny decide them, audit shows who
// decided what at which layer.
func TestJobApproveDenyStatusAudit(t *testing.T) {
	const task = "cli test: approve one write, deny the other"
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(
			demomodel.ToolCall("w_yes", "Write", map[string]any{"file_path": "yes.txt", "content": "approved\n"}),
			demomodel.ToolCall("w_no", "Write", map[string]any{"file_path": "no.txt", "content": "denied\n"}),
		),
		demomodel.Say("wrote yes.txt; no.txt was refused"),
	))
	ws := testenv.Workspace(t)
	id := startDetached(t, ws, task)
	testenv.WaitPending(t, c, id, "w_yes", pendingWait)
	testenv.WaitPending(t, c, id, "w_no", pendingWait)

	code, out, errOut := runApp(t, context.Background(), "status", id)
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{
		"job:       " + id,
		"task:      " + task,
		"workspace: " + ws,
		"mode:      default",
		"state:     waiting",
		"pending:   w_yes: Write yes.txt (denied in ",
		"pending:   w_no: Write no.txt (denied in ",
		"starter approve " + id + " w_yes",
		"starter deny " + id + " w_no",
		"denied in ",
	} {
		assert.Contains(t, out, want)
	}

	code, out, errOut = runApp(t, context.Background(), "approve", id, "w_yes", "--by", "alice@test")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "allowed Write yes.txt, by alice@test via cli\n", out)
	assert.Empty(t, errOut)
	code, out, errOut = runApp(t, context.Background(), "deny", id, "--reason", "not that file", "w_no", "--by", "bob@test")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "denied Write no.txt, by bob@test via cli (not that file)\n", out)

	res := testenv.Finished(t, c, id, time.Minute)
	assert.Equal(t, "wrote yes.txt; no.txt was refused", res.Answer)
	b, err := os.ReadFile(filepath.Join(ws, "yes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "approved\n", string(b))
	assert.NoFileExists(t, filepath.Join(ws, "no.txt"))

	dec := testenv.Decisions(testenv.Audit(t, c, id))
	require.Contains(t, dec, "w_yes")
	require.Contains(t, dec, "w_no")
	assert.Equal(t, approval.Allow, dec["w_yes"].Decision)
	assert.Equal(t, approval.LayerHuman, dec["w_yes"].Layer)
	assert.Equal(t, "alice@test", dec["w_yes"].Approver)
	assert.Equal(t, approval.Deny, dec["w_no"].Decision)
	assert.Equal(t, approval.LayerHuman, dec["w_no"].Layer)
	assert.Equal(t, "bob@test", dec["w_no"].Approver)
	assert.Contains(t, dec["w_no"].Reason, "not that file")

	// The job has ended: approve and mode say so instead of a server error.
	code, out, errOut = runApp(t, context.Background(), "approve", id, "w_no")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "custos: cannot approve "+id+": the job has ended (completed); see: starter audit "+id+"\n", errOut)
	code, _, errOut = runApp(t, context.Background(), "mode", id, "plan")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "cannot change the mode of "+id+": the job has ended (completed)")

	t.Run("audit table", func(t *testing.T) {
		code, out, errOut := runApp(t, context.Background(), "audit", id)
		require.Equal(t, 0, code, errOut)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.GreaterOrEqual(t, len(lines), 3)
		assert.Regexp(t, `^SEQ\s+TIME\s+CALL\s+TOOL\s+DECISION\s+LAYER\s+RULE/HOOK\s+BY\s+WAIT\s+REASON$`, lines[0])
		row := func(call string) string {
			for _, l := range lines[1:] {
				if f := strings.Fields(l); len(f) > 2 && f[2] == call && f[4] != "signal-ignored" {
					return l
				}
			}
			return ""
		}
		assert.Regexp(t, `w_yes\s+Write\s+allow\s+human\s+alice@test`, row("w_yes"))
		assert.Regexp(t, `w_no\s+Write\s+deny\s+human\s+bob@test\s+\S+\s+.*not that file`, row("w_no"))
	})
	t.Run("audit json", func(t *testing.T) {
		code, out, errOut := runApp(t, context.Background(), "audit", id, "--json")
		require.Equal(t, 0, code, errOut)
		var recs []approval.AuditRecord
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var r approval.AuditRecord
			require.NoError(t, json.Unmarshal([]byte(l), &r), "line %q", l)
			recs = append(recs, r)
		}
		// The same records as the query, in sequence, with no duplicates from
		// merging the file and the query.
		q := testenv.Audit(t, c, id)
		require.Len(t, recs, len(q))
		for i := range recs {
			assert.Equal(t, q[i].Seq, recs[i].Seq)
			assert.Equal(t, q[i].CallID, recs[i].CallID)
			assert.Equal(t, q[i].Decision, recs[i].Decision)
			assert.Equal(t, q[i].Layer, recs[i].Layer)
		}
		got := testenv.Decisions(recs)
		assert.Equal(t, approval.LayerHuman, got["w_no"].Layer)
		assert.Equal(t, approval.Deny, got["w_no"].Decision)
	})
}

// `mode` changes a running job's mode: status shows it and the next edit is
// allowed by the mode layer without asking.
func TestJobModeChange(t *testing.T) {
	const task = "cli test: switch to acceptEdits"
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("m1", "Write", map[string]any{"file_path": "one.txt", "content": "1\n"})),
		demomodel.Calls(demomodel.ToolCall("m2", "Write", map[string]any{"file_path": "two.txt", "content": "2\n"})),
		demomodel.Say("two files"),
	))
	ws := testenv.Workspace(t)
	id := startDetached(t, ws, task)
	testenv.WaitPending(t, c, id, "m1", pendingWait)

	code, out, errOut := runApp(t, context.Background(), "mode", id, "acceptEdits")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, id+": mode default -> acceptEdits\n", out)
	require.Eventually(t, func() bool {
		code, out, _ := runApp(t, context.Background(), "status", id)
		return code == 0 && strings.Contains(out, "mode:      acceptEdits")
	}, 10*time.Second, 100*time.Millisecond, "status never showed the new mode")

	code, _, errOut = runApp(t, context.Background(), "approve", id, "m1")
	require.Equal(t, 0, code, errOut)
	res := testenv.Finished(t, c, id, time.Minute)
	assert.Equal(t, "two files", res.Answer)
	assert.FileExists(t, filepath.Join(ws, "two.txt"))

	dec := testenv.Decisions(testenv.Audit(t, c, id))
	assert.Equal(t, approval.LayerHuman, dec["m1"].Layer)
	assert.Equal(t, approval.LayerMode, dec["m2"].Layer)
	assert.Equal(t, approval.Allow, dec["m2"].Decision)

	code, _, errOut = runApp(t, context.Background(), "mode", id, "yolo")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `"yolo"`)
}

// `cancel` ends a job that waits for a person; nothing it asked for runs.
func TestJobCancel(t *testing.T) {
	const task = "cli test: cancel while waiting"
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("c1", "Write", map[string]any{"file_path": "never.txt", "content": "x"})),
		demomodel.Say("unreachable"),
	))
	ws := testenv.Workspace(t)
	id := startDetached(t, ws, task)
	testenv.WaitPending(t, c, id, "c1", pendingWait)

	// A call that is not pending: the job refuses the answer, and says why.
	code, out, errOut := runApp(t, context.Background(), "approve", id, "c_other")
	assert.Equal(t, 1, code)
	assert.Equal(t, "custos: not applied: no call \"c_other\" is waiting for approval in this job\n", errOut)
	assert.Empty(t, out)
	// The Update's validator refused it before anything entered history.
	for _, r := range testenv.Audit(t, c, id) {
		assert.NotEqual(t, "c_other", r.CallID, "a refused answer left a record: %+v", r)
	}

	code, out, errOut = runApp(t, context.Background(), "cancel", id)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "cancel requested for "+id+"\n", out)
	_, err := testenv.Result(c, id, time.Minute)
	var canceled *temporal.CanceledError
	assert.True(t, errors.As(err, &canceled), "job ends canceled, got %v", err)
	assert.NoFileExists(t, filepath.Join(ws, "never.txt"))
}

// Errors of the job commands: exit codes and messages a person can act on.
func TestJobCommandErrors(t *testing.T) {
	jobEnv(t, "cli test: errors (no job runs)", demomodel.Script())
	const missing = "custos-no-such-job"
	cases := []struct {
		name      string
		args      []string
		code      int
		stderrHas []string
	}{
		{name: "status of unknown job", args: []string{"status", missing}, code: 1,
			stderrHas: []string{"status of " + missing, "not found"}},
		{name: "approve unknown job", args: []string{"approve", missing, "call_1"}, code: 1,
			stderrHas: []string{missing, "not found"}},
		{name: "audit of unknown job", args: []string{"audit", missing}, code: 1,
			stderrHas: []string{"audit of " + missing, "not found"}},
		{name: "cancel unknown job", args: []string{"cancel", missing}, code: 1,
			stderrHas: []string{"cancel " + missing, "not found"}},
		{name: "approve without a call", args: []string{"approve", missing}, code: 2,
			stderrHas: []string{"name exactly one call ID"}},
		{name: "deny with two calls", args: []string{"deny", missing, "a", "b"}, code: 2,
			stderrHas: []string{"name exactly one call ID"}},
		{name: "status without a job", args: []string{"status"}, code: 2,
			stderrHas: []string{"status: the job (workflow) ID comes first"}},
		{name: "flag where the job goes", args: []string{"approve", "--always", missing}, code: 2,
			stderrHas: []string{"the job (workflow) ID comes first"}},
		{name: "mode without a mode", args: []string{"mode", missing}, code: 2,
			stderrHas: []string{"mode JOB MODE"}},
		{name: "unknown flag", args: []string{"deny", missing, "c", "--forever"}, code: 2,
			stderrHas: []string{"-forever"}},
		{name: "run without a task", args: []string{"run", "--detach"}, code: 2,
			stderrHas: []string{"say what to do"}},
		{name: "run with a bad mode", args: []string{"run", "--mode", "yolo", "x"}, code: 2,
			stderrHas: []string{`"yolo"`}},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2,
			stderrHas: []string{`unknown command "frobnicate"`, "usage:"}},
		{name: "no command", args: nil, code: 2, stderrHas: []string{"usage:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runApp(t, context.Background(), tc.args...)
			assert.Equal(t, tc.code, code, "stdout %q stderr %q", out, errOut)
			assert.Empty(t, out)
			for _, s := range tc.stderrHas {
				assert.Contains(t, errOut, s)
			}
		})
	}
}

// A call that needs two verified approvals: status says what it still
// needs and who approved so far; an allow from the CLI does not count and
// says why (exit 1), a deny from anyone denies.
func TestJobQuorumStatusAndCLIRefusal(t *testing.T) {
	const task = "cli test: a deploy that needs two approvals"
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w_dep", "Write", map[string]any{"file_path": "deploy/prod.yaml", "content": "v2\n"})),
		demomodel.Say("done"),
	))
	ws := testenv.Workspace(t)
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".custos"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", "settings.json"),
		[]byte(`{"approvals": [{"rule": "Write(deploy/**)", "require": 2, "from": ["U0ALICE", "U0BOB"]}]}`), 0o644))
	id := startDetached(t, ws, task)
	testenv.WaitPending(t, c, id, "w_dep", pendingWait)

	code, out, errOut := runApp(t, context.Background(), "status", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "approvals: still 2 more from U0ALICE, U0BOB; approved so far: nobody")

	code, out, errOut = runApp(t, context.Background(), "approve", id, "w_dep", "--by", "alice@test")
	assert.Equal(t, 1, code, "an unverified allow does not count: %s", out)
	assert.Contains(t, errOut+out, "each verified by a channel")
	code, _, errOut = runApp(t, context.Background(), "deny", id, "w_dep", "--by", "bob@test")
	require.Equal(t, 0, code, errOut)
	testenv.Finished(t, c, id, time.Minute)
	assert.NoFileExists(t, filepath.Join(ws, "deploy", "prod.yaml"))
}

// At the terminal, a call that needs verified approvals offers only what
// this terminal's answer can do: deny or view. A typed y does not send an
// allow the job would refuse; n denies.
func TestInteractiveQuorumPromptOffersOnlyDeny(t *testing.T) {
	const task = "cli test: a quorum call at the terminal"
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("q_dep", "Write", map[string]any{"file_path": "deploy/prod.yaml", "content": "v2\n"})),
		demomodel.Say("done"),
	))
	ws := testenv.Workspace(t)
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".custos"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", "settings.json"),
		[]byte(`{"approvals": [{"rule": "Write(deploy/**)", "require": 2, "from": ["U0ALICE", "U0BOB"]}]}`), 0o644))
	id := "custos-cli-test-quorum-prompt"
	term := startInteractive(t, "run", "--once", "--workspace", ws, "--id", id, task)
	asked := term.waitFor("(denied in ")
	assert.Contains(t, asked, "needs approvals from verified people (still 2 more from U0ALICE, U0BOB); here you may [n]o deny it or [v]iew it")
	assert.NotContains(t, asked, "[a]lways")
	term.waitFor("): ")
	term.typeLine("y")
	term.waitFor("from this terminal you may only deny it")
	st, err := testenv.Status(c, id)
	require.NoError(t, err)
	require.Len(t, st.Pending, 1, "nothing was sent for the y")
	term.waitFor("): ")
	term.typeLine("n")
	res := testenv.Finished(t, c, id, time.Minute)
	assert.Equal(t, "done", res.Answer)
	assert.NoFileExists(t, filepath.Join(ws, "deploy", "prod.yaml"))
	refused := 0
	for _, r := range testenv.Audit(t, c, id) {
		if r.Event == "answer-refused" || r.Event == "signal-ignored" {
			refused++
		}
	}
	assert.Zero(t, refused, "no refused answer was sent")
}
