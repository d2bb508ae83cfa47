package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/notify/slack"
	"github.com/custos-dev/custos/notify/slack/slacktest"
	"github.com/custos-dev/custos/workflows/jobapi"
)

const (
	slackSecret  = "e2e-signing-secret-0123456789"
	slackToken   = "xoxb-e2e-token"
	slackChannel = "C0APPROVALS"
)

var (
	alice   = slacktest.User{ID: "U0ALICE", Name: "alice"}
	lead    = slacktest.User{ID: "U0LEAD", Name: "lea"} // an approver through the S0LEADS group
	mallory = slacktest.User{ID: "U0MALLORY", Name: "mallory"}
)

// slackRig is the embedded server, a worker with the Slack channel on, the
// fake Slack and the bot's endpoint.
type slackRig struct {
	srv      testenv.Server
	c        client.Client
	slack    *slacktest.Server
	endpoint string // interactivity URL
	commands string // slash command URL
	events   string // Events API URL (thread replies)
	model    *demomodel.Server
}

func startSlackRig(t testing.TB, srv testenv.Server, c client.Client, script demomodel.Handler) *slackRig {
	t.Helper()
	return startSlackRigWith(t, srv, c, script, "")
}

// startSlackRigWith is startSlackRig with the workers' user settings in
// userConfigDir ("" for empty ones).
func startSlackRigWith(t testing.TB, srv testenv.Server, c client.Client, script demomodel.Handler, userConfigDir string) *slackRig {
	t.Helper()
	fake, err := slacktest.New(slackToken, slackChannel)
	require.NoError(t, err)
	t.Cleanup(fake.Close)
	fake.SetGroup("S0LEADS", lead.ID)
	approvers, err := slack.ParseApprovers(alice.ID + ",S0LEADS")
	require.NoError(t, err)
	cfg := slack.Config{BotToken: slackToken, SigningSecret: slackSecret, Channel: slackChannel, Approvers: approvers,
		APIURL: fake.URL, Addr: "127.0.0.1:0"}
	require.NoError(t, cfg.Validate())
	// The workers' state directory holds the answer key the bot signs with.
	ch, err := app.StartChannels(context.Background(), c, app.ChannelConfig{Slack: &cfg, StateDir: testenv.StateDir()}, testenv.Logger())
	require.NoError(t, err)
	t.Cleanup(ch.Close)
	model, base := testenv.StartModel(t, script)
	testenv.StartWorkers(t, c, base, app.Options{Notifiers: ch.Notifiers, UserConfigDir: userConfigDir})
	return &slackRig{srv: srv, c: c, slack: fake, endpoint: "http://" + ch.SlackAddr + slack.InteractivityPath,
		commands: "http://" + ch.SlackAddr + slack.CommandsPath, events: "http://" + ch.SlackAddr + slack.EventsPath, model: model}
}

// message waits for the approval message of call and returns it.
func (r *slackRig) message(t testing.TB, call string) slacktest.Message {
	t.Helper()
	var found slacktest.Message
	ok := r.slack.Wait(90*time.Second, func(s *slacktest.Server) bool {
		for _, m := range s.Messages() {
			if strings.Contains(string(m.Metadata), `"call":"`+call+`"`) {
				found = m
				return true
			}
		}
		return false
	})
	require.True(t, ok, "no Slack message for call %s", call)
	return found
}

// click sends a signed click as Slack would and returns the HTTP status
// and the response_url the bot will answer on.
func (r *slackRig) click(t testing.TB, m slacktest.Message, action string, u slacktest.User, secret string, at time.Time) (int, string) {
	t.Helper()
	respURL := r.slack.ResponseURL()
	payload, err := slacktest.Click(m, action, u, respURL)
	require.NoError(t, err)
	res, err := slacktest.Post(r.endpoint, secret, at, slacktest.Interaction(payload))
	require.NoError(t, err)
	return res.StatusCode, respURL
}

// reply waits for the bot's ephemeral answer on respURL.
func (r *slackRig) reply(t testing.TB, respURL string) slacktest.Reply {
	t.Helper()
	id := respURL[strings.LastIndex(respURL, "/")+1:]
	var got slacktest.Reply
	ok := r.slack.Wait(60*time.Second, func(s *slacktest.Server) bool {
		for _, rep := range s.Replies() {
			if rep.ID == id {
				got = rep
				return true
			}
		}
		return false
	})
	require.True(t, ok, "no reply on %s", respURL)
	assert.Equal(t, "ephemeral", got.ResponseType, "replies are for the person who clicked only")
	return got
}

func buttons(t *testing.T, m slacktest.Message) []string {
	t.Helper()
	var blocks []struct {
		Type     string `json:"type"`
		Elements []struct {
			ActionID string `json:"action_id"`
		} `json:"elements"`
	}
	require.NoError(t, json.Unmarshal(m.Blocks, &blocks))
	var ids []string
	for _, b := range blocks {
		if b.Type == "actions" {
			for _, e := range b.Elements {
				ids = append(ids, e.ActionID)
			}
		}
	}
	return ids
}

// The whole Slack path: the message with its buttons; forged, replayed and
// unauthorised clicks refused while the call keeps waiting; an approver's
// click runs the call; the message shows the outcome; a stale click is told
// what happened.
func TestSlackApproval(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	rig := startSlackRig(t, srv, c, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "notes.md", "content": "from slack\n"})),
		demomodel.Calls(demomodel.ToolCall("w2", "Write", map[string]any{"file_path": "other.md", "content": "never\n"})),
		demomodel.Say("done"),
	))
	ws := testenv.Workspace(t)
	run := testenv.StartJob(t, c, "slack-approval", jobapi.JobInput{Once: true, Task: "write notes", Workspace: ws, ApprovalTimeout: 10 * time.Minute})

	m := rig.message(t, "w1")
	assert.Equal(t, slackChannel, m.Channel)
	assert.Equal(t, []string{slack.ActionAllow, slack.ActionDeny, slack.ActionAlways, slack.ActionNever, slack.ActionView}, buttons(t, m))
	assert.Contains(t, string(m.Blocks), "slack-approval")
	assert.Contains(t, string(m.Blocks), "notes.md")
	assert.Contains(t, string(m.Blocks), "+from slack", "the Write's diff is shown")
	assert.Contains(t, m.Text, "<!date^")

	stillPending := func(why string) {
		st, err := testenv.Status(c, run.GetID())
		require.NoError(t, err, why)
		require.Len(t, st.Pending, 1, why)
		assert.Equal(t, "w1", st.Pending[0].CallID, why)
		assert.NoFileExists(t, ws+"/notes.md", why)
	}

	// Forged: signed with another secret. Replayed: a real signature of a
	// request ten minutes old. Both refused before the payload is read.
	code, _ := rig.click(t, m, slack.ActionAllow, alice, "not-the-signing-secret", time.Now())
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = rig.click(t, m, slack.ActionAllow, alice, slackSecret, time.Now().Add(-10*time.Minute))
	assert.Equal(t, http.StatusUnauthorized, code)
	stillPending("after a forged and a replayed click")

	// Someone not in SLACK_APPROVERS: refused, told why, audited.
	code, respURL := rig.click(t, m, slack.ActionAllow, mallory, slackSecret, time.Now())
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "refused: you are not in SLACK_APPROVERS: only approvers may allow, always or never (anyone may deny). The call is still waiting.",
		rig.reply(t, respURL).Text)
	stillPending("after a click by someone not in SLACK_APPROVERS")
	var refused []approval.AuditRecord
	for _, r := range testenv.Audit(t, c, run.GetID()) {
		if r.Event == "answer-refused" {
			refused = append(refused, r)
		}
	}
	require.Len(t, refused, 1, "only mallory's click reached the job: the forged and replayed ones left no trace")
	assert.Equal(t, "U0MALLORY (mallory)", refused[0].Approver)
	assert.Equal(t, "slack", refused[0].Channel)
	assert.Equal(t, slack.NotApprover, refused[0].Reason)
	assert.Equal(t, "w1", refused[0].CallID)

	// An approver's click runs the call.
	code, respURL = rig.click(t, m, slack.ActionAllow, alice, slackSecret, time.Now())
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "allowed Write notes.md", rig.reply(t, respURL).Text)
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(ws, "notes.md"))
		return err == nil && string(b) == "from slack\n"
	}, time.Minute, 50*time.Millisecond, "the allowed Write never ran")
	dec := testenv.Decisions(testenv.Audit(t, c, run.GetID()))["w1"]
	assert.Equal(t, approval.Allow, dec.Decision)
	assert.Equal(t, "U0ALICE (alice)", dec.Approver)
	assert.Equal(t, "slack", dec.Channel)

	// The message now shows the outcome, without buttons.
	require.True(t, rig.slack.Wait(30*time.Second, func(s *slacktest.Server) bool { return s.Messages()[0].Updates > 0 }), "message never updated")
	updated := rig.slack.Messages()[0]
	assert.Empty(t, buttons(t, updated))
	assert.Contains(t, updated.Text, "*Allowed* by <@U0ALICE> via slack")

	// The next call gets its own message. A click on the first, stale one
	// (its buttons were still on someone's screen) is told what happened.
	m2 := rig.message(t, "w2")
	code, respURL = rig.click(t, m, slack.ActionDeny, lead, slackSecret, time.Now())
	require.Equal(t, http.StatusOK, code)
	assert.Regexp(t, `^not applied: already allowed by U0ALICE \(alice\) via slack at \d\d:\d\d:\d\d UTC$`, rig.reply(t, respURL).Text)

	// "View input" opens a modal with the full input, for anyone.
	code, _ = rig.click(t, m2, slack.ActionView, mallory, slackSecret, time.Now())
	require.Equal(t, http.StatusOK, code)
	require.True(t, rig.slack.Wait(30*time.Second, func(s *slacktest.Server) bool { return len(s.Calls("views.open")) == 1 }), "no modal opened")
	view := rig.slack.Calls("views.open")[0].Params
	assert.Equal(t, "1337.42.trigger", view["trigger_id"])
	// The input as display.Input renders it: each field, a value's lines
	// behind a bar (the view is JSON text here, so its newlines are \n).
	assert.Contains(t, view["view"], `file_path: other.md\ncontent:\n  │ never`)

	// The slash command: narrowing the mode is open to all, widening needs
	// an approver; status lists the waiting call.
	command := func(u slacktest.User, text string) string {
		respURL := rig.slack.ResponseURL()
		res, err := slacktest.Post(rig.commands, slackSecret, time.Now(), slacktest.Command(u, text, respURL))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode)
		return rig.reply(t, respURL).Text
	}
	assert.Equal(t, "refused: you are not in SLACK_APPROVERS: only approvers may switch a job to bypass (anyone may switch to default or plan)",
		command(mallory, "mode slack-approval bypass"))
	assert.Equal(t, "job slack-approval: mode default → default", command(mallory, "mode slack-approval default"))
	assert.Equal(t, "job slack-approval: mode default → acceptEdits", command(lead, "mode slack-approval acceptEdits"))
	assert.Contains(t, command(mallory, "status slack-approval"), "Write other.md (call w2)")
	var modeRefused int
	for _, r := range testenv.Audit(t, c, run.GetID()) {
		if r.Event == "mode-refused" && r.Approver == "U0MALLORY (mallory)" {
			modeRefused++
		}
	}
	assert.Equal(t, 1, modeRefused, "the refused mode change is audited")

	// Anyone in the channel may deny.
	code, respURL = rig.click(t, m2, slack.ActionDeny, mallory, slackSecret, time.Now())
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "denied Write other.md", rig.reply(t, respURL).Text)
	testenv.Finished(t, c, run.GetID(), time.Minute)
	assert.NoFileExists(t, ws+"/other.md")
	require.True(t, rig.slack.Wait(30*time.Second, func(s *slacktest.Server) bool { return s.Messages()[1].Updates > 0 }), "message never updated")
	assert.Contains(t, rig.slack.Messages()[1].Text, "*Denied* by <@U0MALLORY> via slack")
	assert.Len(t, rig.slack.Calls("chat.postMessage"), 2, "one post per call")
}

// A lost response to the post makes Temporal retry the activity, and the
// retry finds the message instead of posting again; the message shows the
// Edit's unified diff; nobody answers, the timer denies, and the message
// says so.
func TestSlackRetryDiffAndTimer(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	rig := startSlackRig(t, srv, c, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("e1", "Edit", map[string]any{"file_path": "greet.txt", "old_string": "hello", "new_string": "goodbye"})),
		demomodel.Say("denied, fine"),
	))
	ws := testenv.Workspace(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "greet.txt"), []byte("line one\nhello world\nline three\n"), 0o644))
	// Slack stores the message, then the connection drops before the answer.
	rig.slack.FailNext("chat.postMessage", slacktest.FailDropResponse)
	ctx := context.Background()
	run := testenv.StartJob(t, c, "slack-timer", jobapi.JobInput{Once: true, Task: "edit", Workspace: ws, ApprovalTimeout: 4 * time.Second})

	m := rig.message(t, "e1")
	var blocks []struct {
		Type string `json:"type"`
		Text struct {
			Text string `json:"text"`
		} `json:"text"`
	}
	require.NoError(t, json.Unmarshal(m.Blocks, &blocks))
	var preview string
	for _, b := range blocks {
		if b.Type == "section" && strings.HasPrefix(b.Text.Text, "*What it would do*") {
			preview = b.Text.Text
		}
	}
	assert.Equal(t, "*What it would do*\n```--- a/greet.txt\n+++ b/greet.txt\n@@ -1,3 +1,3 @@\n line one\n-hello world\n+goodbye world\n line three```", preview)

	testenv.Finished(t, c, run.GetID(), 2*time.Minute)
	assert.Equal(t, "line one\nhello world\nline three\n", readFile(t, ws, "greet.txt"), "denied: unchanged")
	assert.Equal(t, approval.Deny, testenv.Decisions(testenv.Audit(t, c, run.GetID()))["e1"].Decision)

	// Temporal really retried the posting activity …
	attempts := map[string]int32{}
	iter := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]string{}
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err)
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[e.GetEventId()] = a.GetActivityType().GetName()
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
			attempts[scheduled[a.GetScheduledEventId()]] = a.GetAttempt()
		}
	}
	assert.Equal(t, int32(2), attempts[notify.NotifyPendingActivity], "the post's response was lost: a second attempt")
	// … and it did not post twice: it found the message by its metadata.
	assert.Len(t, rig.slack.Calls("chat.postMessage"), 1)
	assert.Len(t, rig.slack.Messages(), 1)
	assert.NotEmpty(t, rig.slack.Calls("conversations.history"))

	require.True(t, rig.slack.Wait(30*time.Second, func(s *slacktest.Server) bool { return s.Messages()[0].Updates > 0 }), "message never updated")
	updated := rig.slack.Messages()[0]
	assert.Contains(t, updated.Text, "*Denied by the timer*")
	assert.Empty(t, buttons(t, updated))
}

// Socket Mode: no endpoint, no signatures; the click comes over the app's
// WebSocket, is acknowledged, and runs the call like an HTTP click.
func TestSlackSocketMode(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	fake, err := slacktest.New(slackToken, slackChannel)
	require.NoError(t, err)
	t.Cleanup(fake.Close)
	approvers, err := slack.ParseApprovers(alice.ID)
	require.NoError(t, err)
	cfg := slack.Config{BotToken: slackToken, AppToken: slacktest.AppToken, Channel: slackChannel, Approvers: approvers, APIURL: fake.URL}
	require.NoError(t, cfg.Validate(), "Socket Mode needs no signing secret")
	// The workers' state directory holds the answer key the bot signs with.
	ch, err := app.StartChannels(context.Background(), c, app.ChannelConfig{Slack: &cfg, StateDir: testenv.StateDir()}, testenv.Logger())
	require.NoError(t, err)
	t.Cleanup(ch.Close)
	assert.Empty(t, ch.SlackAddr, "no HTTP endpoint in Socket Mode")
	model, base := testenv.StartModel(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("s1", "Write", map[string]any{"file_path": "socket.txt", "content": "over the socket\n"})),
		demomodel.Say("done"),
	))
	testenv.StartWorkers(t, c, base, app.Options{Notifiers: ch.Notifiers})
	rig := &slackRig{slack: fake}

	ws := testenv.Workspace(t)
	run := testenv.StartJob(t, c, "slack-socket", jobapi.JobInput{Once: true, Task: "write", Workspace: ws, ApprovalTimeout: 10 * time.Minute})
	m := rig.message(t, "s1")

	// A non-approver first: refused over the socket too.
	respURL := fake.ResponseURL()
	payload, err := slacktest.Click(m, slack.ActionAllow, mallory, respURL)
	require.NoError(t, err)
	env, err := fake.SocketSend("interactive", json.RawMessage(payload))
	require.NoError(t, err)
	assert.Contains(t, rig.reply(t, respURL).Text, "refused: you are not in SLACK_APPROVERS")
	assert.True(t, fake.Wait(30*time.Second, func(s *slacktest.Server) bool { return s.Acked(env) }), "the envelope is acknowledged")

	// A reply in the job's thread comes as an events_api envelope: it is
	// acknowledged, and the job gets it as a message.
	_, ev := fake.Say(alice, slackChannel, m.TS, "also update the changelog")
	env, err = fake.SocketSend("events_api", ev)
	require.NoError(t, err)
	require.True(t, fake.Wait(60*time.Second, func(s *slacktest.Server) bool { return len(botMentions(s, m.TS)) == 1 }), "no reply in the thread")
	assert.Equal(t, "<@U0ALICE> queued for job slack-socket: it reads it after what it runs now (message 2; 1 waiting)", botMentions(fake, m.TS)[0])
	assert.True(t, fake.Acked(env))
	assert.Equal(t, []string{"message U0ALICE/slack: also update the changelog"}, auditedMessages(t, c, run.GetID()))

	respURL = fake.ResponseURL()
	payload, err = slacktest.Click(m, slack.ActionAllow, alice, respURL)
	require.NoError(t, err)
	_, err = fake.SocketSend("interactive", json.RawMessage(payload))
	require.NoError(t, err)
	assert.Equal(t, "allowed Write socket.txt", rig.reply(t, respURL).Text)
	testenv.Finished(t, c, run.GetID(), time.Minute)
	assert.Equal(t, "over the socket\n", readFile(t, ws, "socket.txt"))
	assert.True(t, modelSaw(model, "also update the changelog"), "the model got the reply after the call's result")
	assert.NotEmpty(t, fake.Calls("apps.connections.open"))
}

// An answer counts for the call it was given for, through Slack: the model
// reuses a call ID in its next turn. The second call gets a message of its
// own under its own identity, and a click on the first call's message, still
// on someone's screen, is told what became of that call and approves nothing.
func TestSlackReusedCallID(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	rig := startSlackRig(t, srv, c, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("r1", "Write", map[string]any{"file_path": "benign.md", "content": "ok\n"})),
		demomodel.Calls(demomodel.ToolCall("r1", "Write", map[string]any{"file_path": "evil.md", "content": "pwned\n"})),
		demomodel.Say("done"),
	))
	ws := testenv.Workspace(t)
	run := testenv.StartJob(t, c, "slack-reused-id", jobapi.JobInput{Once: true, Task: "write twice", Workspace: ws, ApprovalTimeout: 10 * time.Minute})

	first := rig.message(t, "r1")
	code, respURL := rig.click(t, first, slack.ActionAllow, alice, slackSecret, time.Now())
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, rig.reply(t, respURL).Text, "allowed")

	second := rig.message(t, "r1_t2")
	assert.Contains(t, string(second.Blocks), "evil.md")
	// The first message's Allow again: it names r1, which is decided.
	code, respURL = rig.click(t, first, slack.ActionAllow, alice, slackSecret, time.Now())
	require.Equal(t, http.StatusOK, code)
	assert.Regexp(t, `^not applied: already allowed by U0ALICE \(alice\) via slack`, rig.reply(t, respURL).Text)
	st, err := testenv.Status(c, run.GetID())
	require.NoError(t, err)
	require.Len(t, st.Pending, 1)
	assert.Equal(t, "r1_t2", st.Pending[0].CallID, "the second call still waits for its own answer")
	assert.NoFileExists(t, ws+"/evil.md")

	code, respURL = rig.click(t, second, slack.ActionDeny, alice, slackSecret, time.Now())
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, rig.reply(t, respURL).Text, "denied")
	testenv.Finished(t, c, run.GetID(), 2*time.Minute)
	assert.FileExists(t, ws+"/benign.md")
	assert.NoFileExists(t, ws+"/evil.md")
}

// A command with escape sequences and bidirectional controls reaches the
// local Slack as visible text: the message shows what will run, nothing
// in it is raw, through the Slack channel end to end.
func TestSlackShowsEscapesAsText(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	hostile := "echo safe\x1b[2K\rrm -rf ~ \u202e)txt.hcetad( \u200dx <@U0ALICE> *bold*"
	rig := startSlackRig(t, srv, c, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("h1", "Bash", map[string]any{"command": hostile})),
		demomodel.Say("done"),
	))
	ws := testenv.Workspace(t)
	run := testenv.StartJob(t, c, "slack-escapes", jobapi.JobInput{Once: true, Task: "show it", Workspace: ws, ApprovalTimeout: 10 * time.Minute})

	msg := rig.message(t, "h1")
	blocks := string(msg.Blocks)
	for _, raw := range []string{"\x1b", "\r", "\u202e", "\u200d", `\u001b`, `\r`, `\u202e`, `\u200d`} {
		assert.NotContains(t, blocks, raw, "raw in the Slack message")
	}
	for _, shown := range []string{"⟨ESC⟩[2K⟨CR⟩rm -rf ~", "⟨U+202E⟩", "⟨U+200D⟩"} {
		assert.Contains(t, blocks, shown)
	}
	assert.NotContains(t, blocks, "<@U0ALICE>", "a mention in the command does not ping anyone")
	code, respURL := rig.click(t, msg, slack.ActionDeny, alice, slackSecret, time.Now())
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, rig.reply(t, respURL).Text, "denied")
	testenv.Finished(t, c, run.GetID(), 2*time.Minute)
}
