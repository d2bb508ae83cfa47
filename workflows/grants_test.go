package workflows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/internal/statedir"
)

func write(id, path string) demomodel.Reply {
	return demomodel.Calls(call(id, "Write", map[string]any{"file_path": path, "content": id}))
}

// auditEvents are the job's audit records of one event kind.
func (h *harness) auditEvents(event string) []approval.AuditRecord {
	var out []approval.AuditRecord
	for _, r := range h.audit() {
		if r.Event == event {
			out = append(out, r)
		}
	}
	return out
}

// TestJobGrantAllowsCoveredCallsUntilItEnds: an allow answer with a grant
// allows the next covered call without asking, audited with the grant; a
// call the rule does not cover still asks; once the grant's time is up it
// ends (audited) and the next covered call asks again.
func TestJobGrantAllowsCoveredCallsUntilItEnds(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		write("w1", "a.txt"), write("w2", "b.txt"), write("w3", "conf.json"), write("w4", "c.txt"),
		demomodel.Say("done"),
	))
	h.input.ApprovalTimeout = 2 * time.Minute
	o := h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "allow", By: "alice", Channel: "cli",
		Grant: &GrantSpec{Rule: "Write(*.txt)", For: "1m"}})
	var during Status
	var details string
	h.env.RegisterDelayedCallback(func() { during, details = h.status(), h.currentDetails() }, 30*time.Second)
	// w3 is not covered and times out at about 2m1s; w4 is asked then.
	h.signalAt(3*time.Minute, "w4", "allow")
	_, err := h.run()
	require.NoError(t, err)

	require.True(t, o.accepted, "update rejected: %v", o.rejected)
	require.NoError(t, o.err)
	require.NotNil(t, o.result.Grant)
	g := *o.result.Grant
	assert.Equal(t, "g1", g.ID)
	assert.Equal(t, "Write(*.txt)", g.Rule)
	assert.Equal(t, ScopeJob, g.Scope)
	assert.Equal(t, time.Minute, g.Until.Sub(g.At))

	dec := h.decisions()
	w2 := dec["w2"]
	assert.Equal(t, approval.Allow, w2.Decision)
	assert.Equal(t, approval.LayerHuman, w2.Layer)
	assert.Equal(t, "alice", w2.Approver, "the grant stands in for alice")
	assert.Equal(t, "grant", w2.Channel)
	require.NotNil(t, w2.Grant, "the audit names the grant")
	assert.Equal(t, approval.GrantInfo{ID: "g1", Rule: "Write(*.txt)", Scope: "job", By: "alice", Channel: "cli", At: g.At, Until: g.Until}, *w2.Grant)
	assert.Zero(t, w2.WaitMillis, "nobody was asked")
	assert.Equal(t, "w2", h.file("b.txt"))

	assert.Equal(t, answerTimeout, dec["w3"].Approver, "a call the rule does not cover still asks")
	assert.Nil(t, dec["w3"].Grant)
	assert.Equal(t, "test", dec["w4"].Approver, "after the grant ended, a covered call asks again")
	assert.Nil(t, dec["w4"].Grant)

	require.Len(t, during.Grants, 1)
	assert.Contains(t, details, "### Grants (1)\n\n- `g1` allows `Write(*.txt)` in this job until ")
	assert.Contains(t, details, `revoke with Update `+"`revoke`"+`, input `+"`"+`{"grantId":"g1","by":"web-ui","channel":"web-ui"}`+"`")
	assert.Equal(t, 1, during.Grants[0].Uses)
	assert.Empty(t, h.status().Grants)
	given, ended := h.auditEvents("grant-given"), h.auditEvents("grant-ended")
	require.Len(t, given, 1)
	assert.Equal(t, "alice", given[0].Approver)
	require.Len(t, ended, 1)
	assert.Equal(t, "expired", ended[0].Reason)
	assert.Equal(t, g.Until, ended[0].Time.UTC())
}

// TestGrantNeverPassesADenyOrSystemRule: a grant as broad as "Bash" or
// "Write" still loses to a system rule (rm -rf /), a deny rule, and an ask
// rule; a covered call is allowed.
func TestGrantNeverPassesADenyOrSystemRule(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("b1", "Bash", map[string]any{"command": "echo hi"})),
		demomodel.Calls(call("b2", "Bash", map[string]any{"command": "rm -rf /"})),
		demomodel.Calls(call("b3", "Bash", map[string]any{"command": "git push origin main"})),
		demomodel.Calls(call("b4", "Bash", map[string]any{"command": "curl https://example.com"})),
		demomodel.Calls(call("b5", "Bash", map[string]any{"command": "echo again"})),
		demomodel.Say("done"),
	), withSettings(`{"permissions": {"deny": ["Bash(curl:*)"], "ask": ["Bash(git push:*)"]}}`))
	h.input.ApprovalTimeout = 10 * time.Second
	o := h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "b1", Decision: "allow", By: "alice",
		Grant: &GrantSpec{Rule: "Bash", For: "1h"}})
	_, err := h.run()
	require.NoError(t, err)
	require.NoError(t, o.err)
	dec := h.decisions()
	assert.True(t, dec["b2"].System, "rm -rf / is denied by a system rule: %+v", dec["b2"])
	assert.Equal(t, approval.Deny, dec["b2"].Decision)
	assert.Nil(t, dec["b2"].Grant)
	assert.Equal(t, answerTimeout, dec["b3"].Approver, "an ask rule still asks a person")
	assert.Nil(t, dec["b3"].Grant)
	assert.Equal(t, approval.Deny, dec["b4"].Decision)
	assert.Equal(t, "Bash(curl:*)", dec["b4"].Rule)
	assert.Equal(t, approval.LayerRules, dec["b4"].Layer)
	assert.Nil(t, dec["b4"].Grant)
	assert.Equal(t, approval.Allow, dec["b5"].Decision)
	require.NotNil(t, dec["b5"].Grant)
	assert.Equal(t, "g1", dec["b5"].Grant.ID)
}

// TestInvalidGrantSpecsRefused: each GrantSpec that would not hold is
// refused by the validator with a clear reason, and nothing is recorded;
// the call still waits and a valid answer then counts.
func TestInvalidGrantSpecsRefused(t *testing.T) {
	h := newHarness(t, demomodel.Script(write("w1", "a.txt"), demomodel.Say("done")),
		withSettings(`{"permissions": {"deny": ["Write(secret.txt)"]}}`))
	h.input.ApprovalTimeout = time.Hour
	start := h.env.Now()
	cases := []struct {
		name  string
		grant GrantSpec
		dec   string
		want  string
	}{
		{"unknown scope", GrantSpec{Scope: "galaxy", For: "1m"}, "allow", `grant scope "galaxy" is not job or workspace`},
		{"neither end", GrantSpec{}, "allow", `exactly one of "for"`},
		{"both ends", GrantSpec{For: "1m", Until: start.Add(time.Hour)}, "allow", `exactly one of "for"`},
		{"not a duration", GrantSpec{For: "soon"}, "allow", `not a duration`},
		{"zero", GrantSpec{For: "0s"}, "allow", `a positive time`},
		{"negative", GrantSpec{For: "-5m"}, "allow", `a positive time`},
		{"absurd", GrantSpec{For: "900h"}, "allow", `longer than 168h0m0s`},
		{"until in the past", GrantSpec{Until: start.Add(-time.Minute)}, "allow", `not in the future`},
		{"until too far", GrantSpec{Until: start.Add(30 * 24 * time.Hour)}, "allow", `more than 168h0m0s from now`},
		{"rule does not parse", GrantSpec{Rule: "Write(", For: "1m"}, "allow", `malformed rule`},
		{"rule of another tool", GrantSpec{Rule: "Bash(ls)", For: "1m"}, "allow", `not about Write calls`},
		{"rule does not cover", GrantSpec{Rule: "Write(src/**)", For: "1m"}, "allow", `does not allow this call`},
		{"with deny", GrantSpec{For: "1m"}, "deny", `a grant goes with the decision allow`},
		{"with always", GrantSpec{For: "1m"}, "always", `a grant goes with the decision allow`},
	}
	outcomes := make([]*updateOutcome, len(cases))
	for i, c := range cases {
		g := c.grant
		outcomes[i] = h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: c.dec, By: "mallory", Grant: &g})
	}
	ok := h.updateAt(2*time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "allow", By: "alice",
		Grant: &GrantSpec{For: "10m"}})
	_, err := h.run()
	require.NoError(t, err)
	for i, c := range cases {
		o := outcomes[i]
		assert.False(t, o.accepted, c.name)
		if assert.Error(t, o.rejected, c.name) {
			assert.Contains(t, o.rejected.Error(), "not applied: ", c.name)
			assert.Contains(t, o.rejected.Error(), c.want, c.name)
		}
	}
	require.NoError(t, ok.err)
	require.NotNil(t, ok.result.Grant)
	assert.Equal(t, "Write(a.txt)", ok.result.Grant.Rule, "no rule grants the rule Always would save")
	assert.Equal(t, "alice", h.decisions()["w1"].Approver)
	for _, r := range h.audit() {
		assert.NotEqual(t, "mallory", r.Approver, "a refused answer left a trace: %+v", r)
	}
}

// TestGrantRevoked: the revoke Update (starter revoke's path) ends a live
// grant at once, everywhere: the next covered call asks again; its sender
// gets the ended grant; an unknown grant is refused with nothing recorded.
func TestGrantRevoked(t *testing.T) {
	h := newHarness(t, demomodel.Script(write("w1", "a.txt"), write("w2", "conf.json"), write("w3", "b.txt"), demomodel.Say("done")))
	h.input.ApprovalTimeout = 5 * time.Minute
	h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "allow", By: "alice",
		Grant: &GrantSpec{Rule: "Write(*.txt)", For: "1h"}})
	unknown := h.updateAt(10*time.Second, RevokeUpdate, Revoke{GrantID: "g9", By: "bob"})
	rev := h.updateAt(11*time.Second, RevokeUpdate, Revoke{GrantID: "g1", By: "bob", Channel: "cli"})
	h.signalAt(20*time.Second, "w2", "allow")
	h.signalAt(30*time.Second, "w3", "allow")
	_, err := h.run()
	require.NoError(t, err)
	require.Error(t, unknown.rejected)
	assert.Contains(t, unknown.rejected.Error(), `not applied: no grant "g9" is live in this job`)
	require.True(t, rev.accepted, "revoke rejected: %v", rev.rejected)
	require.NoError(t, rev.err)
	assert.Equal(t, "g1", rev.grant.ID)
	assert.Equal(t, "Write(*.txt)", rev.grant.Rule)
	assert.Equal(t, "test", h.decisions()["w3"].Approver, "the revoked grant no longer answers")
	assert.Nil(t, h.decisions()["w3"].Grant)
	ended := h.auditEvents("grant-ended")
	require.Len(t, ended, 1)
	assert.Equal(t, "revoked", ended[0].Reason)
	assert.Equal(t, "bob", ended[0].Approver)
	assert.Equal(t, "cli", ended[0].Channel)
	assert.Empty(t, h.status().Grants)
}

// TestGrantSurvivesContinueAsNew: the grant travels in the state into the
// next run, still allows covered calls there, and its timer is restarted.
func TestGrantSurvivesContinueAsNew(t *testing.T) {
	h := newHarness(t, demomodel.Script(write("w1", "a.txt"), write("w2", "b.txt")))
	// Past the second model answer: w2 travels to the next run.
	h.input.ContinueAsNewEvery = 2
	h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "allow", By: "alice",
		Grant: &GrantSpec{Rule: "Write(*.txt)", For: "10m"}})
	h.env.ExecuteWorkflow(WorkflowName, h.input)
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, h.env.GetWorkflowError(), &can)
	var next JobInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.State)
	require.Len(t, next.State.Grants, 1)
	g := next.State.Grants[0]
	assert.Equal(t, "g1", g.ID)

	// The next run, on a fresh worker: w2 (b.txt) runs there, then c.txt
	// after the grant's end (x waits out its own timer first).
	h2 := newHarness(t, demomodel.Script(write("x", "conf.json"), write("w3", "c.txt"), demomodel.Say("done")))
	next.Workspace, next.ContinueAsNewEvery = h2.ws, 0
	next.State.Env.Workspace = h2.ws
	next.ApprovalTimeout = 15 * time.Minute
	h2.input = next
	h2.signalAt(20*time.Minute, "w3", "allow")
	_, err := h2.run()
	require.NoError(t, err)
	dec := h2.decisions()
	require.NotNil(t, dec["w2"].Grant, "the carried grant allows: %+v", dec["w2"])
	assert.Equal(t, "g1", dec["w2"].Grant.ID)
	assert.Nil(t, dec["w3"].Grant, "the restarted timer ended it")
	ended := h2.auditEvents("grant-ended")
	require.Len(t, ended, 1)
	assert.Equal(t, "expired", ended[0].Reason)
	assert.Equal(t, g.Until, ended[0].Time.UTC())
}

func sameHostAs(o *harness) harnessOpt { return func(c *harnessConfig) { c.sameHost = o } }

// TestWorkspaceGrantHonouredByAnotherJob: a workspace grant given in one
// job allows a covered call of another job of the workspace on the same
// host, started later, without asking; that job's revoke ends it on the
// host, so a third job asks again. The host keeps it owner-only.
func TestWorkspaceGrantHonouredByAnotherJob(t *testing.T) {
	h1 := newHarness(t, demomodel.Script(write("w1", "a.txt"), demomodel.Say("done")))
	h1.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "job-a"})
	o := h1.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "allow", By: "alice", Channel: "cli",
		Grant: &GrantSpec{Rule: "Write(*.txt)", Scope: ScopeWorkspace, For: "1h"}})
	_, err := h1.run()
	require.NoError(t, err)
	require.NoError(t, o.err)
	require.NotNil(t, o.result.Grant)
	id := o.result.Grant.ID
	assert.Equal(t, "job-a.g1", id)
	file := filepath.Join(statedir.WorkspaceDirIn(h1.stateDir, h1.ws), "grants.json")
	fi, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	h2 := newHarness(t, demomodel.Script(write("w2", "b.txt"), write("x", "conf.json"), write("w3", "c.txt"), demomodel.Say("done")),
		sameHostAs(h1))
	h2.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "job-b"})
	h2.input.ApprovalTimeout = time.Hour
	var during Status
	h2.env.RegisterDelayedCallback(func() { during = h2.status() }, 5*time.Second)
	rev := h2.updateAt(10*time.Second, RevokeUpdate, Revoke{GrantID: id, By: "bob", Channel: "cli"})
	h2.signalAt(20*time.Second, "x", "allow")
	h2.signalAt(30*time.Second, "w3", "deny")
	_, err = h2.run()
	require.NoError(t, err)
	dec := h2.decisions()
	require.NotNil(t, dec["w2"].Grant, "the other job's workspace grant allows: %+v", dec["w2"])
	assert.Equal(t, id, dec["w2"].Grant.ID)
	assert.Equal(t, "alice", dec["w2"].Approver)
	assert.Equal(t, "w2", h2.file("b.txt"))
	require.Len(t, during.Grants, 1, "status lists the workspace's grant")
	assert.Equal(t, ScopeWorkspace, during.Grants[0].Scope)
	require.True(t, rev.accepted, "revoke rejected: %v", rev.rejected)
	require.NoError(t, rev.err)
	assert.Equal(t, id, rev.grant.ID)
	assert.Nil(t, dec["w3"].Grant, "revoked in this job: asks")
	assert.Equal(t, approval.Deny, dec["w3"].Decision)

	h3 := newHarness(t, demomodel.Script(write("w4", "d.txt"), demomodel.Say("done")), sameHostAs(h1))
	h3.input.ApprovalTimeout = 5 * time.Second
	_, err = h3.run()
	require.NoError(t, err)
	assert.Equal(t, answerTimeout, h3.decisions()["w4"].Approver, "revoked on the host: a later job asks")
}

// TestGrantNeverPassesAHookOrAMode: a hook's deny and a hook's ask still
// decide a call the grant covers, and plan mode denies it; a plain covered
// call is allowed by the grant.
func TestGrantNeverPassesAHookOrAMode(t *testing.T) {
	reg := hooks.NewRegistry()
	require.NoError(t, reg.Register(hooks.Handler{
		Name: "system:test-gate", Point: hooks.ToolApprovalPre, Priority: -10, Source: hooks.SourceSystem, Matcher: "Write",
		Decide: func(p hooks.Payload) hooks.Result {
			switch {
			case strings.Contains(string(p.Input), "secret"):
				return hooks.Result{Decision: "deny", Reason: "no secrets"}
			case strings.Contains(string(p.Input), "ask-me"):
				return hooks.Result{Decision: "ask", Reason: "a person looks at these"}
			}
			return hooks.Result{}
		},
	}))
	writeWith := func(id, path, content string) demomodel.Reply {
		return demomodel.Calls(call(id, "Write", map[string]any{"file_path": path, "content": content}))
	}
	h := newHarness(t, demomodel.Script(
		write("w1", "a.txt"), writeWith("w2", "b.txt", "secret"), write("w3", "c.txt"),
		writeWith("w4", "d.txt", "ask-me"), write("w5", "e.txt"), demomodel.Say("done"),
	), withSystemHooks(reg))
	h.input.ApprovalTimeout = 10 * time.Second
	h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "allow", By: "alice",
		Grant: &GrantSpec{Rule: "Write(*.txt)", For: "1h"}})
	// While w4 waits for a person, the job is switched to plan.
	h.updateAt(5*time.Second, ModeUpdate, ModeChange{Mode: "plan", By: "bob"})
	_, err := h.run()
	require.NoError(t, err)
	dec := h.decisions()
	assert.Equal(t, approval.Deny, dec["w2"].Decision)
	assert.Equal(t, approval.LayerHook, dec["w2"].Layer)
	assert.Nil(t, dec["w2"].Grant)
	require.NotNil(t, dec["w3"].Grant)
	assert.Equal(t, answerTimeout, dec["w4"].Approver, "a hook's ask still asks a person")
	assert.Nil(t, dec["w4"].Grant)
	assert.Equal(t, approval.Deny, dec["w5"].Decision)
	assert.Equal(t, approval.LayerMode, dec["w5"].Layer, "plan mode denies what the grant covers")
	assert.Nil(t, dec["w5"].Grant)
	assert.Empty(t, h.file("b.txt"))
	assert.Empty(t, h.file("e.txt"))
}

// TestWorkspaceGrantEndsOnTime: another job honours a workspace grant only
// until its end, by its own clock, whether or not the giving job is still
// there to end it.
func TestWorkspaceGrantEndsOnTime(t *testing.T) {
	h1 := newHarness(t, demomodel.Script(write("w1", "a.txt"), demomodel.Say("done")))
	h1.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "job-a"})
	h1.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "allow", By: "alice",
		Grant: &GrantSpec{Rule: "Write(*.txt)", Scope: ScopeWorkspace, For: "5m"}})
	_, err := h1.run()
	require.NoError(t, err)

	h2 := newHarness(t, demomodel.Script(write("w2", "b.txt"), write("x", "conf.json"), write("w3", "c.txt"), demomodel.Say("done")),
		sameHostAs(h1))
	h2.input.ApprovalTimeout = 10 * time.Minute // x waits it out: past the grant's end
	_, err = h2.run()
	require.NoError(t, err)
	dec := h2.decisions()
	require.NotNil(t, dec["w2"].Grant, "within its time: %+v", dec["w2"])
	assert.Nil(t, dec["w3"].Grant, "past its end, the grant allows nothing")
	assert.Equal(t, answerTimeout, dec["w3"].Approver)
}

// TestGrantNeverAnswersAQuorum: a call that needs N of M approvals is not
// answered by a grant that covers it, and a grant offered with one of its
// votes is refused.
func TestGrantNeverAnswersAQuorum(t *testing.T) {
	h := newHarness(t, demomodel.Script(write("w0", "notes.txt"), write("w1", "deploy/a.yaml"), demomodel.Say("done")),
		withSettings(quorumSettings))
	h.input.ApprovalTimeout = 10 * time.Minute
	h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "w0", Decision: "allow", By: "alice",
		Grant: &GrantSpec{Rule: "Write(**)", For: "1h"}})
	vote := h.vouch("w1", "allow", "U0ALICE")
	vote.Grant = &GrantSpec{Rule: "Write(**)", For: "1h"}
	withGrant := h.updateAt(2*time.Second, DecideUpdate, vote)
	_, err := h.run()
	require.NoError(t, err)
	require.Error(t, withGrant.rejected)
	assert.Contains(t, withGrant.rejected.Error(), "grant stands in for them")
	w1 := h.decisions()["w1"]
	assert.Nil(t, w1.Grant, "the grant does not answer a quorum call: %+v", w1)
	assert.Equal(t, answerTimeout, w1.Approver)
	assert.Empty(t, h.file("deploy/a.yaml"))
}

// TestGrantAnswersCallsWaitingBesideIt: a grant given for one of several
// calls waiting at once answers the others it covers at once (audited with
// the grant), and leaves the rest waiting for a person.
func TestGrantAnswersCallsWaitingBesideIt(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(
			call("w1", "Write", map[string]any{"file_path": "a.txt", "content": "a"}),
			call("w2", "Write", map[string]any{"file_path": "b.txt", "content": "b"}),
			call("w3", "Write", map[string]any{"file_path": "conf.json", "content": "{}"}),
		),
		demomodel.Say("done"),
	))
	h.input.ApprovalTimeout = time.Minute
	o := h.updateAt(time.Second, DecideUpdate, ApprovalDecision{CallID: "w1", Decision: "allow", By: "alice", Channel: "cli",
		Grant: &GrantSpec{Rule: "Write(*.txt)", For: "30m"}})
	var after Status
	h.env.RegisterDelayedCallback(func() { after = h.status() }, 2*time.Second)
	_, err := h.run()
	require.NoError(t, err)
	require.NoError(t, o.err)

	require.Len(t, after.Pending, 1, "only the call the grant does not cover still waits")
	assert.Equal(t, "w3", after.Pending[0].CallID)
	require.Len(t, after.Grants, 1)
	assert.Equal(t, 1, after.Grants[0].Uses)
	dec := h.decisions()
	assert.Equal(t, approval.Allow, dec["w2"].Decision)
	assert.Equal(t, "alice", dec["w2"].Approver)
	assert.Equal(t, "grant", dec["w2"].Channel)
	require.NotNil(t, dec["w2"].Grant)
	assert.Equal(t, "g1", dec["w2"].Grant.ID)
	assert.Equal(t, "b", h.file("b.txt"))
	assert.Equal(t, answerTimeout, dec["w3"].Approver)
	assert.Nil(t, dec["w3"].Grant)
}
