package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/notify/slack"
	"github.com/custos-dev/custos/notify/slack/slacktest"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// A grant through Slack: the Allow 30m button (approvers only) allows the
// call and grants its rule, so the next covered call runs without a
// message; /custos grants lists it, /custos revoke (anyone) ends it and the
// next covered call asks again.
func TestSlackGrantAndRevoke(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	write := func(id, content string) demomodel.Reply {
		return demomodel.Calls(demomodel.ToolCall(id, "Write", map[string]any{"file_path": "notes.md", "content": content}))
	}
	rig := startSlackRig(t, srv, c, demomodel.Script(
		write("w1", "one\n"), write("w2", "two\n"),
		demomodel.Calls(demomodel.ToolCall("w3", "Write", map[string]any{"file_path": "conf.json", "content": "{}\n"})),
		write("w4", "four\n"),
		demomodel.Say("done"),
	))
	ws := testenv.Workspace(t)
	const job = "slack-grant"
	testenv.StartJob(t, c, job, jobapi.JobInput{Once: true, Task: "write notes", Workspace: ws, ApprovalTimeout: 10 * time.Minute})

	m := rig.message(t, "w1")
	assert.Contains(t, string(m.Blocks), "also allows `Write(notes.md)` in this job for 30m")
	code, respURL := rig.click(t, m, slack.ActionGrant, mallory, slackSecret, time.Now())
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, rig.reply(t, respURL).Text, "refused: you are not in SLACK_APPROVERS")
	code, respURL = rig.click(t, m, slack.ActionGrant, alice, slackSecret, time.Now())
	require.Equal(t, http.StatusOK, code)
	reply := rig.reply(t, respURL).Text
	assert.True(t, strings.HasPrefix(reply, "allowed Write notes.md; granted g1: `Write(notes.md)` in this job until "), reply)

	testenv.WaitPending(t, c, job, "w3", 90*time.Second)
	for _, msg := range rig.slack.Messages() {
		assert.NotContains(t, string(msg.Metadata), `"call":"w2"`, "w2 ran under the grant, nobody was asked")
	}
	command := func(u slacktest.User, text string) string {
		respURL := rig.slack.ResponseURL()
		res, err := slacktest.Post(rig.commands, slackSecret, time.Now(), slacktest.Command(u, text, respURL))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode)
		return rig.reply(t, respURL).Text
	}
	grants := command(mallory, "grants "+job)
	assert.Contains(t, grants, "job slack-grant: 1 live grant(s)\n• g1 `Write(notes.md)` in this job until ")
	assert.Contains(t, grants, "used 1 times")
	assert.Equal(t, "revoked g1: it allowed `Write(notes.md)` (given by U0ALICE (alice) via slack)", command(mallory, "revoke "+job+" g1"))
	assert.Contains(t, command(mallory, "revoke "+job+" g1"), `not applied: no grant "g1" is live in this job`)

	code, respURL = rig.click(t, rig.message(t, "w3"), slack.ActionAllow, alice, slackSecret, time.Now())
	require.Equal(t, http.StatusOK, code)
	rig.reply(t, respURL)
	m4 := rig.message(t, "w4")
	code, respURL = rig.click(t, m4, slack.ActionDeny, mallory, slackSecret, time.Now())
	require.Equal(t, http.StatusOK, code)
	rig.reply(t, respURL)
	testenv.Finished(t, c, job, time.Minute)

	dec := testenv.Decisions(testenv.Audit(t, c, job))
	require.NotNil(t, dec["w2"].Grant, "%+v", dec["w2"])
	assert.Equal(t, "g1", dec["w2"].Grant.ID)
	assert.Equal(t, "slack", dec["w2"].Grant.Channel)
	assert.Equal(t, approval.Allow, dec["w2"].Decision)
	assert.Nil(t, dec["w4"].Grant)
	assert.Equal(t, approval.Deny, dec["w4"].Decision)
}

// decide answers a call through the decide Update, as every channel does.
func decide(t *testing.T, c client.Client, job string, d jobapi.ApprovalDecision) jobapi.DecideResult {
	t.Helper()
	h, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: job, UpdateName: jobapi.DecideUpdate,
		Args: []any{d}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	var res jobapi.DecideResult
	require.NoError(t, h.Get(context.Background(), &res))
	return res
}

// A job grant survives its worker's restart: the new worker replays the
// job's history (the grant, its timer, the recorded choice of grant) and
// the grant still answers the next covered call.
func TestGrantSurvivesWorkerRestart(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	_, base := testenv.StartModel(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "notes.md", "content": "one\n"})),
		demomodel.Calls(demomodel.ToolCall("w2", "Write", map[string]any{"file_path": "conf.json", "content": "{}\n"})),
		demomodel.Calls(demomodel.ToolCall("w3", "Write", map[string]any{"file_path": "notes.md", "content": "three\n"})),
		demomodel.Say("done"),
	))
	first := testenv.StartWorkers(t, c, base, app.Options{})
	ws := testenv.Workspace(t)
	const job = "grant-restart"
	testenv.StartJob(t, c, job, jobapi.JobInput{Once: true, Task: "write notes", Workspace: ws, ApprovalTimeout: 10 * time.Minute})
	testenv.WaitPending(t, c, job, "w1", 90*time.Second)
	res := decide(t, c, job, jobapi.ApprovalDecision{CallID: "w1", Decision: "allow", By: "alice", Channel: "cli",
		Grant: &jobapi.GrantSpec{For: "30m"}})
	require.NotNil(t, res.Grant)
	testenv.WaitPending(t, c, job, "w2", 90*time.Second)

	first.Stop()
	testenv.StartWorkers(t, c, base, app.Options{})
	decide(t, c, job, jobapi.ApprovalDecision{CallID: "w2", Decision: "allow", By: "alice", Channel: "cli"})
	testenv.Finished(t, c, job, time.Minute)

	dec := testenv.Decisions(testenv.Audit(t, c, job))
	require.NotNil(t, dec["w3"].Grant, "%+v", dec["w3"])
	assert.Equal(t, res.Grant.ID, dec["w3"].Grant.ID)
	assert.Equal(t, "alice", dec["w3"].Approver)
	b, err := os.ReadFile(filepath.Join(ws, "notes.md"))
	require.NoError(t, err)
	assert.Equal(t, "three\n", string(b))
}
