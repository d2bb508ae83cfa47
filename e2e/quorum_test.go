package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/notify/slack"
	"github.com/custos-dev/custos/notify/slack/slacktest"
	"github.com/custos-dev/custos/workflows/jobapi"
)

var bob = slacktest.User{ID: "U0BOB", Name: "bob"}

// An N-of-M call through the local Slack: writes under deploy/ need two
// of alice and the leads (lea, bob). alice started the job, so her click
// is refused; lea's counts and says what is still needed; bob's runs the
// call. The next call: one approval, then anyone's deny denies it.
func TestSlackQuorum(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	userDir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(userDir, "custos"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(userDir, "custos", "settings.json"), []byte(`{
  "approvals": [{"rule": "Write(deploy/**)", "require": 2, "from": ["U0ALICE", "S0LEADS"]}],
  "permissions": {"defaultMode": "acceptEdits"}
}`), 0o600))
	rig := startSlackRigWith(t, srv, c, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("d1", "Write", map[string]any{"file_path": "deploy/prod.yaml", "content": "v2\n"})),
		demomodel.Calls(demomodel.ToolCall("d2", "Write", map[string]any{"file_path": "deploy/staging.yaml", "content": "v3\n"})),
		demomodel.Say("done"),
	), userDir)
	rig.slack.SetGroup("S0LEADS", lead.ID, bob.ID)
	ws := testenv.Workspace(t)
	run := testenv.StartJob(t, c, "slack-quorum", jobapi.JobInput{Once: true, Task: "deploy", Workspace: ws,
		ApprovalTimeout: 10 * time.Minute, Owner: []string{alice.ID}})

	m := rig.message(t, "d1")
	click := func(m slacktest.Message, action string, u slacktest.User) string {
		code, respURL := rig.click(t, m, action, u, slackSecret, time.Now())
		require.Equal(t, http.StatusOK, code)
		return rig.reply(t, respURL).Text
	}
	assert.Equal(t, "not applied: U0ALICE is whom this job is for: their own answer does not count towards its approvals; still needed: 2 more from U0ALICE, S0LEADS",
		click(m, slack.ActionAllow, alice))
	assert.Equal(t, "approval counted for Write deploy/prod.yaml; still needed: 1 more from U0ALICE, S0LEADS. The call is still waiting.",
		click(m, slack.ActionAllow, lead))
	assert.NoFileExists(t, filepath.Join(ws, "deploy", "prod.yaml"), "one approval of two runs nothing")
	assert.Regexp(t, "^not applied: U0LEAD already approved", click(m, slack.ActionAllow, lead))
	assert.Equal(t, "allowed Write deploy/prod.yaml", click(m, slack.ActionAllow, bob))
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(ws, "deploy", "prod.yaml"))
		return err == nil && string(b) == "v2\n"
	}, time.Minute, 50*time.Millisecond, "the approved Write never ran")

	m2 := rig.message(t, "d2")
	assert.Contains(t, click(m2, slack.ActionAllow, bob), "still needed: 1 more")
	assert.Equal(t, "denied Write deploy/staging.yaml", click(m2, slack.ActionDeny, mallory), "anyone's deny denies")
	testenv.Finished(t, c, run.GetID(), time.Minute)
	assert.NoFileExists(t, filepath.Join(ws, "deploy", "staging.yaml"))

	recs := testenv.Audit(t, c, run.GetID())
	var votes []string
	for _, r := range recs {
		if r.Event == "approval-vote" {
			votes = append(votes, r.CallID+":"+r.Approver)
		}
	}
	assert.Equal(t, []string{"d1:U0LEAD", "d1:U0BOB", "d2:U0BOB"}, votes, "each counted approval is audited")
	dec := testenv.Decisions(recs)
	assert.Equal(t, approval.Allow, dec["d1"].Decision)
	assert.Equal(t, "U0LEAD + U0BOB", dec["d1"].Approver)
	assert.Equal(t, approval.Deny, dec["d2"].Decision)
	assert.Equal(t, "U0MALLORY (mallory)", dec["d2"].Approver)
}
