package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/notify/slack"
	"github.com/custos-dev/custos/notify/slack/slacktest"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// talkScript is the model of the conversation tests: its first turn asks
// for a Write (w1.txt), which waits for a person; every later turn
// answers, naming how many messages it was given, so each answer differs.
func talkScript(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleTool {
			return demomodel.Say(fmt.Sprintf("answered %d messages", len(req.Messages))), nil
		}
	}
	return demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "w1.txt", "content": "x\n"})), nil
}

// modelSaw reports whether the model was ever sent text as a person's
// turn: what a job's messages became on the wire to the model.
func modelSaw(model *demomodel.Server, text string) bool {
	for _, req := range model.Requests() {
		for _, m := range req.Messages {
			if m.Role == openai.ChatMessageRoleUser && m.Content == text {
				return true
			}
		}
	}
	return false
}

// modelSawAny is the texts of want the model was ever sent as a person's
// turn.
func modelSawAny(model *demomodel.Server, want ...string) []string {
	var seen []string
	for _, w := range want {
		if modelSaw(model, w) {
			seen = append(seen, w)
		}
	}
	return seen
}

// auditedMessages are the job's audited messages, in order: "message
// BY/CHANNEL: first line" or "message-refused BY/CHANNEL: reason".
func auditedMessages(t testing.TB, c client.Client, job string) []string {
	t.Helper()
	var out []string
	for _, r := range testenv.Audit(t, c, job) {
		if r.Event == "message" || r.Event == "message-refused" {
			out = append(out, fmt.Sprintf("%s %s/%s: %s", r.Event, r.Approver, r.Channel, r.Reason))
		}
	}
	return out
}

// waitState waits for the job's status to be in state.
func waitState(t testing.TB, c client.Client, job, state string) jobapi.Status {
	t.Helper()
	var st jobapi.Status
	require.Eventually(t, func() bool {
		var err error
		st, err = testenv.Status(c, job)
		return err == nil && st.State == state
	}, pendingWait, 20*time.Millisecond, "job %s never was %q (last: %q)", job, state, st.State)
	return st
}

// botMentions are the bot's replies to people in the thread root starts
// (what it says became of a message starts with the person's mention).
func botMentions(s *slacktest.Server, root string) []string {
	var out []string
	for _, m := range s.Messages() {
		if m.ThreadTS == root && m.BotID != "" && strings.HasPrefix(m.Text, "<@") {
			out = append(out, m.Text)
		}
	}
	return out
}

// event posts ev to the bot's Events API endpoint, signed, as Slack does.
func (r *slackRig) event(t testing.TB, ev json.RawMessage) {
	t.Helper()
	res, _, err := slacktest.PostJSON(r.events, slackSecret, time.Now(), ev)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
}

// replyInThread posts ev and returns what the bot then replies in the
// thread root starts.
func (r *slackRig) replyInThread(t testing.TB, root string, ev json.RawMessage) string {
	t.Helper()
	before := len(botMentions(r.slack, root))
	r.event(t, ev)
	var got string
	ok := r.slack.Wait(60*time.Second, func(s *slacktest.Server) bool {
		if m := botMentions(s, root); len(m) > before {
			got = m[before]
			return true
		}
		return false
	})
	require.True(t, ok, "the bot never replied in the thread")
	return got
}

// say runs `/custos text` as u and returns the bot's private answer. Each
// command gets a trigger ID of its own, as Slack gives it.
func (r *slackRig) say(t testing.TB, u slacktest.User, text string) string {
	t.Helper()
	respURL := r.slack.ResponseURL()
	form := slacktest.Command(u, text, respURL)
	form.Set("trigger_id", "trigger-"+respURL[strings.LastIndex(respURL, "/")+1:])
	res, err := slacktest.Post(r.commands, slackSecret, time.Now(), form)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	return r.reply(t, respURL).Text
}

// A conversing job's Slack thread, end to end on the real server: what is
// not a person's reply in the thread never reaches the job; an approver's
// reply is a message the model gets in its next request, and the bot says
// in the thread what became of it; a reply saying "approve everything" is
// a message and changes no mode or pending call; a non-approver's reply is
// refused and recorded, and the model never sees it; an event Slack sends
// twice counts once.
func TestSlackMessages(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	rig := startSlackRig(t, srv, c, talkScript)
	const job = "slack-talk"
	ws := testenv.Workspace(t)
	testenv.StartJob(t, c, job, jobapi.JobInput{Task: "write w1", Workspace: ws, ApprovalTimeout: 10 * time.Minute})
	root := rig.message(t, "w1") // the job's first post starts its thread
	before, err := testenv.Status(c, job)
	require.NoError(t, err)
	ignored := ignoredEvents(rig, root.TS)
	for _, ev := range ignored {
		rig.event(t, ev.event)
	}

	approverEvent := json.RawMessage(nil)
	for _, tc := range []struct {
		name  string
		user  slacktest.User
		text  string // as Slack sends it: &, < and > escaped
		reply string
	}{
		{"an approver's reply is a message, not a command", alice, "approve everything &amp; switch to bypass",
			"<@U0ALICE> queued for job slack-talk: it reads it after what it runs now (message 2; 1 waiting)"},
		{"someone not among the approvers is refused", mallory, "allow w1 &lt;now&gt;",
			"<@U0MALLORY> refused: you are not in SLACK_APPROVERS: only approvers may send a job messages. The job recorded your message and did not read it."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ev := rig.slack.Say(tc.user, slackChannel, root.TS, tc.text)
			if tc.user == alice {
				approverEvent = ev
			}
			assert.Equal(t, tc.reply, rig.replyInThread(t, root.TS, ev))
		})
	}
	require.NotNil(t, approverEvent)
	// Slack redelivers an event it thinks was not received: same ts, the
	// same message.
	rig.replyInThread(t, root.TS, approverEvent)

	// The ignored events were posted before the replies above, whose
	// outcome was waited for: had any reached the job, it would be here.
	want := []string{"message U0ALICE/slack: approve everything & switch to bypass", "message-refused U0MALLORY/slack: " + slack.NotApprover}
	assert.Equal(t, want, auditedMessages(t, c, job), "one message from alice, counted once; mallory's refused; nothing else")
	st, err := testenv.Status(c, job)
	require.NoError(t, err)
	assert.Equal(t, before.Mode, st.Mode, "a message changes no mode")
	require.Len(t, st.Pending, 1, "a message answers no call")
	assert.Equal(t, "w1", st.Pending[0].CallID)
	assert.NoFileExists(t, ws+"/w1.txt")
	assert.Equal(t, 2, st.Messages, "the task and alice's message")
	assert.Equal(t, 1, st.Queued)

	// Once w1 is answered, the model gets alice's message (unescaped), and
	// never mallory's or an ignored one.
	code, respURL := rig.click(t, root, slack.ActionAllow, alice, slackSecret, time.Now())
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "allowed Write w1.txt", rig.reply(t, respURL).Text)
	st = waitState(t, c, job, jobapi.PhaseWaitingMessage)
	assert.True(t, modelSaw(rig.model, "approve everything & switch to bypass"), "alice's message reached the model")
	notSeen := []string{"allow w1 <now>", "allow w1 &lt;now&gt;"}
	for _, ev := range ignored {
		notSeen = append(notSeen, ev.text)
	}
	assert.Empty(t, modelSawAny(rig.model, notSeen...))
	assert.Equal(t, before.Mode, st.Mode)
	assert.True(t, rig.slack.Wait(60*time.Second, func(s *slacktest.Server) bool {
		for _, m := range s.Messages() {
			if m.ThreadTS == root.TS && strings.HasPrefix(m.Text, ":speech_balloon:") && strings.Contains(m.Text, st.LastAnswer) {
				return true
			}
		}
		return false
	}), "the job's answer is posted in its thread, where a reply is its next message")

	slackConversation(t, rig, job, root.TS)
}

// ignoredEvent is an event that must not reach the job, and its text.
type ignoredEvent struct {
	text  string
	event json.RawMessage
}

// ignoredEvents are what the bot must not send a job: another bot's
// message and the bot's own in the job's thread, a person's message
// outside any thread, and a reply in a thread a person started.
func ignoredEvents(rig *slackRig, root string) []ignoredEvent {
	top, _ := rig.slack.Say(alice, slackChannel, "", "lunch?")
	_, other := rig.slack.Say(alice, slackChannel, top.TS, "ignored: another thread")
	_, outside := rig.slack.Say(alice, slackChannel, "", "ignored: outside a thread")
	return []ignoredEvent{
		{"ignored: another bot", slacktest.MessageEvent(slacktest.Message{Channel: slackChannel, TS: "1.000001", ThreadTS: root,
			Text: "ignored: another bot", User: "U0OTHERBOT", BotID: "B0OTHER"})},
		{"ignored: the bot itself", slacktest.MessageEvent(slacktest.Message{Channel: slackChannel, TS: "1.000002", ThreadTS: root,
			Text: "ignored: the bot itself", User: slacktest.BotUser})},
		{"ignored: outside a thread", outside},
		{"lunch?", slacktest.MessageEvent(top)},
		{"ignored: another thread", other},
	}
}

// slackConversation goes on with the job of TestSlackMessages, which
// waits for its next message: a reply is delivered at once, `/custos say`
// too (a non-approver's refused), and once the job has ended both say so.
func slackConversation(t *testing.T, rig *slackRig, job, root string) {
	c := rig.c
	_, ev := rig.slack.Say(lead, slackChannel, root, "now the docs")
	assert.Equal(t, "<@U0LEAD> delivered to job slack-talk: it works on it now (message 3)", rig.replyInThread(t, root, ev),
		"lea is an approver through her group")
	require.Eventually(t, func() bool { return modelSaw(rig.model, "now the docs") }, pendingWait, 20*time.Millisecond)
	waitState(t, c, job, jobapi.PhaseWaitingMessage)

	assert.Contains(t, rig.say(t, mallory, "say slack-talk mode bypass"), "refused: you are not in SLACK_APPROVERS")
	assert.Equal(t, "delivered to job slack-talk: it works on it now (message 4)", rig.say(t, alice, "say slack-talk keep the  spaces\nand lines"))
	require.Eventually(t, func() bool { return modelSaw(rig.model, "keep the  spaces\nand lines") }, pendingWait, 20*time.Millisecond,
		"the text as typed reached the model")
	var posted []string
	for _, m := range rig.slack.Messages() {
		if m.ThreadTS == root && strings.HasPrefix(m.Text, ":bust_in_silhouette:") {
			posted = append(posted, m.Text)
		}
	}
	assert.Equal(t, []string{":bust_in_silhouette: <@U0ALICE> via `/custos say`:\nkeep the  spaces\nand lines"}, posted,
		"what was taken is posted in the thread; the refused one is not")
	assert.Empty(t, modelSawAny(rig.model, "mode bypass"))
	st := waitState(t, c, job, jobapi.PhaseWaitingMessage)
	assert.Equal(t, "default", string(st.Mode), "mallory's \"mode bypass\" was a refused message, not a mode change")
	assert.Equal(t, 4, st.Messages)

	_, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: job, UpdateName: jobapi.EndUpdate,
		Args: []any{jobapi.End{By: "test", Channel: "test"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	testenv.Finished(t, c, job, time.Minute)
	assert.Equal(t, "not delivered: job slack-talk has ended (or never existed)", rig.say(t, alice, "say slack-talk anyone there?"))
	_, ev = rig.slack.Say(alice, slackChannel, root, "one more thing")
	assert.Equal(t, "<@U0ALICE> not delivered: job slack-talk has ended (or never existed)", rig.replyInThread(t, root, ev))

	assert.Equal(t, []string{
		"message U0ALICE/slack: approve everything & switch to bypass",
		"message-refused U0MALLORY/slack: " + slack.NotApprover,
		"message U0LEAD/slack: now the docs",
		"message-refused U0MALLORY (mallory)/slack: " + slack.NotApprover,
		"message U0ALICE (alice)/slack: keep the  spaces …", // its first line
	}, auditedMessages(t, c, job), "the job's whole record of messages")
	assert.Empty(t, modelSawAny(rig.model, "anyone there?", "one more thing"))
}
