package slack

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/notify/slack/slacktest"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// The Allow-30m button sits beside the text naming the rule it grants;
// posted through the fake Slack, it is the button a click sends back, with
// the job and call. A call without a rule to grant has no such button.
func TestGrantButton(t *testing.T) {
	s := fakeSlack(t)
	n := testNotifier(s)
	p := pending()
	p.Rule = "Write(notes.md)"
	_, err := n.Pending(context.Background(), p)
	require.NoError(t, err)
	m := s.Messages()[0]
	assert.Contains(t, string(m.Blocks), "*Allow 30m* also allows `Write(notes.md)` in this job for 30m")
	payload, err := slacktest.Click(m, ActionGrant, slacktest.User{ID: "U0ALICE", Name: "alice"}, s.ResponseURL())
	require.NoError(t, err)
	var cb struct {
		Actions []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"actions"`
	}
	require.NoError(t, json.Unmarshal([]byte(payload), &cb))
	require.Len(t, cb.Actions, 1)
	assert.Equal(t, ActionGrant, cb.Actions[0].ActionID)
	var v ButtonValue
	require.NoError(t, json.Unmarshal([]byte(cb.Actions[0].Value), &v))
	assert.Equal(t, ButtonValue{Job: "job-1", Call: "w1"}, v)

	_, blocks := pendingMessage(pending())
	assert.NotContains(t, blocksJSON(t, blocks), ActionGrant, "no rule, no grant button")

	// The rule quotes the model's command: shown as display text.
	p.Rule = "Bash(echo \x1b[2K \u202e)"
	_, blocks = pendingMessage(p)
	js := blocksJSON(t, blocks)
	assert.Contains(t, js, "also allows `Bash(echo ⟨ESC⟩[2K ⟨U+202E⟩)`")
	assert.NotContains(t, js, `\u001b`)
}

// What the person who clicked reads of a grant, and of a revoke's refusal.
func TestGrantReplies(t *testing.T) {
	until := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	got := decidedText(jobapi.DecideResult{Tool: "Bash", Summary: "Bash npm test", Decision: "allow", Answer: "allow",
		Grant: &jobapi.Grant{ID: "g1", Rule: "Bash(npm test:*)", Scope: "job", Until: until}})
	assert.Equal(t, "allowed Bash npm test; granted g1: `Bash(npm test:*)` in this job until 2026-12-01 18:00 UTC (revoke: `/custos revoke JOB g1`)", got)
	assert.Contains(t, got, "(revoke: `/custos revoke JOB g1`)")
}

// An escalation step posts the call again, with its buttons, under a line
// saying nobody answered: with a mention in the notifier's channel, or in
// the step's own channel.
func TestEscalatePostsToTheGroup(t *testing.T) {
	s, err := slacktest.New("xoxb-test", "C0APPROVALS", "C0ONCALL")
	require.NoError(t, err)
	t.Cleanup(s.Close)
	n := testNotifier(s)
	e := notify.Escalation{Pending: pending(), Step: 1, After: 20 * time.Second, Notify: "slack", To: "<!subteam^S0ONCALL>"}
	require.NoError(t, n.Escalate(context.Background(), e))
	e.Step, e.To = 2, "C0ONCALL"
	require.NoError(t, n.Escalate(context.Background(), e))
	msgs := s.Messages()
	require.Len(t, msgs, 2)
	assert.Equal(t, "C0APPROVALS", msgs[0].Channel)
	assert.True(t, strings.HasPrefix(msgs[0].Text, "<!subteam^S0ONCALL> :rotating_light: Nobody has answered this call for 20s"), msgs[0].Text)
	assert.Contains(t, string(msgs[0].Blocks), ActionAllow, "the buttons come along")
	assert.Equal(t, "C0ONCALL", msgs[1].Channel)
	assert.True(t, strings.HasPrefix(msgs[1].Text, ":rotating_light: Nobody has answered"), msgs[1].Text)
}
