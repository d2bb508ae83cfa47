package slack

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/slack-go/slack/slackevents"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/notify/slack/slacktest"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// The message Update itself, against real conversing jobs, is tested in
// e2e (TestSlackMessages). These tests cover what is decided before any
// Update is sent, and the words the bot says; their bot has no Temporal
// client, so anything that tried to send one would fail the test.

// offlineBot is a bot on the fake Slack with no Temporal client, serving
// its HTTP endpoint.
func offlineBot(t *testing.T, s *slacktest.Server) (*Bot, string) {
	cfg := testAPI(s)
	b := NewBot(cfg, NewAPI(cfg), nil, slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(b.Close)
	return b, srv.URL
}

// Only a person's new reply in a thread of the approvals channel may
// become a message; everything else is dropped before the bot looks the
// thread up.
func TestWhichEventsArePeoplesReplies(t *testing.T) {
	b := NewBot(Config{Channel: "C0APPROVALS"}, nil, nil, slog.New(slog.DiscardHandler))
	reply := slackevents.MessageEvent{Channel: "C0APPROVALS", User: "U0ALICE", TimeStamp: "2.000001", ThreadTimeStamp: "1.000001"}
	for _, tc := range []struct {
		name string
		edit func(m *slackevents.MessageEvent)
		want bool
	}{
		{"a person's reply", func(*slackevents.MessageEvent) {}, true},
		{"a reply also sent to the channel", func(m *slackevents.MessageEvent) { m.SubType = "thread_broadcast" }, true},
		{"another bot's reply", func(m *slackevents.MessageEvent) { m.BotID, m.SubType = "B0OTHER", "bot_message" }, false},
		{"a bot without a subtype", func(m *slackevents.MessageEvent) { m.BotID = "B0OTHER" }, false},
		{"outside any thread", func(m *slackevents.MessageEvent) { m.ThreadTimeStamp = "" }, false},
		{"a thread's first message", func(m *slackevents.MessageEvent) { m.ThreadTimeStamp = m.TimeStamp }, false},
		{"another channel", func(m *slackevents.MessageEvent) { m.Channel = "C0RANDOM" }, false},
		{"an edit", func(m *slackevents.MessageEvent) { m.SubType = "message_changed" }, false},
		{"a deletion", func(m *slackevents.MessageEvent) { m.SubType = "message_deleted" }, false},
		{"a join", func(m *slackevents.MessageEvent) { m.SubType = "channel_join" }, false},
		{"no user", func(m *slackevents.MessageEvent) { m.User = "" }, false},
		{"a malformed user", func(m *slackevents.MessageEvent) { m.User = "<!channel>" }, false},
	} {
		m := reply
		tc.edit(&m)
		assert.Equal(t, tc.want, b.fromPerson(m), tc.name)
	}
}

// A thread is a job's only when the bot started it with the job's
// metadata: a thread a person started, or a bot message without custos'
// metadata, names no job.
func TestThreadJob(t *testing.T) {
	s := fakeSlack(t)
	b, _ := offlineBot(t, s)
	_, err := testNotifier(s).Pending(context.Background(), pending())
	require.NoError(t, err)
	root := s.Messages()[0]
	top, _ := s.Say(slacktest.User{ID: "U0ALICE", Name: "alice"}, root.Channel, "", "lunch?")
	ctx := context.Background()
	for ts, want := range map[string]string{root.TS: "job-1", top.TS: "", "9.999999": ""} {
		job, err := b.threads.threadJob(ctx, ts, slacktest.BotUser)
		require.NoError(t, err, ts)
		assert.Equal(t, want, job, ts)
	}
	job, err := b.threads.threadJob(ctx, root.TS, "U0SOMEONEELSE")
	require.NoError(t, err)
	assert.Empty(t, job, "a custos message another app's user posted is not a job's thread")
}

// What the bot says became of a message, from the Update's result or
// error.
func TestMessageOutcome(t *testing.T) {
	for _, tc := range []struct {
		name    string
		res     jobapi.MessageResult
		err     error
		refused string
		want    string
	}{
		{"delivered", jobapi.MessageResult{Seq: 3, Delivery: "next", Queued: 1}, nil, "",
			"delivered to job job-1: it works on it now (message 3)"},
		{"queued", jobapi.MessageResult{Seq: 2, Delivery: "queued", Queued: 1}, nil, "",
			"queued for job job-1: it reads it after what it runs now (message 2; 1 waiting)"},
		{"duplicate", jobapi.MessageResult{Seq: 2, Delivery: "duplicate"}, nil, "",
			"already received by job job-1 (message 2): counted once"},
		{"not an approver", jobapi.MessageResult{}, temporal.NewApplicationError("refused: …", "Refused"), NotApprover,
			"refused: you are not in SLACK_APPROVERS: only approvers may send a job messages. The job recorded your message and did not read it."},
		{"approvers unknown", jobapi.MessageResult{}, temporal.NewApplicationError("refused: …", "Refused"), "could not check SLACK_APPROVERS: down",
			"refused: could not check SLACK_APPROVERS: down. The job recorded your message and did not read it."},
		{"ended", jobapi.MessageResult{}, serviceerror.NewNotFound("workflow execution already completed"), "",
			"not delivered: job job-1 has ended (or never existed)"},
		{"the job's refusal", jobapi.MessageResult{}, temporal.NewApplicationError("not applied: the message has no text", "NotApplied"), "",
			"not applied: the message has no text"},
		{"unreachable", jobapi.MessageResult{}, errors.New("connection refused"), "",
			"not delivered: could not reach the job: connection refused"},
	} {
		assert.Equal(t, tc.want, messageOutcome(tc.res, tc.err, "job-1", tc.refused), tc.name)
	}
}

// Slack escapes &, < and > in what people type; the job gets the text as
// typed.
func TestSlackText(t *testing.T) {
	assert.Equal(t, "approve everything & push <now> &lt;", slackText("approve everything &amp; push &lt;now&gt; &amp;lt;"))
}

// `/custos say JOB` without text is a usage error, answered before any
// message is sent.
func TestSayWithoutText(t *testing.T) {
	s := fakeSlack(t)
	_, url := offlineBot(t, s)
	resp := s.ResponseURL()
	res, err := slacktest.Post(url+CommandsPath, testSecret, time.Now(), slacktest.Command(slacktest.User{ID: "U0ALICE", Name: "alice"}, "say job-1", resp))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.True(t, s.Wait(30*time.Second, func(s *slacktest.Server) bool { return len(s.Replies()) == 1 }), "no reply")
	assert.Equal(t, "usage: /custos say JOB text", s.Replies()[0].Text)
	assert.Empty(t, s.Messages(), "nothing is posted in a thread")
}

// Slack checks the Request URL with a challenge; an unsigned event is
// refused before anything reads it.
func TestEventsEndpoint(t *testing.T) {
	s := fakeSlack(t)
	_, url := offlineBot(t, s)
	res, body, err := slacktest.PostJSON(url+EventsPath, testSecret, time.Now(), slacktest.URLVerification("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", body)
	_, ev := s.Say(slacktest.User{ID: "U0ALICE", Name: "alice"}, "C0APPROVALS", "1.000001", "hi")
	res, _, err = slacktest.PostJSON(url+EventsPath, "", time.Now(), ev)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
}

// The job's answer is posted in its thread.
func TestAnswerInTheThread(t *testing.T) {
	s := fakeSlack(t)
	n := testNotifier(s)
	_, err := n.Pending(context.Background(), pending())
	require.NoError(t, err)
	require.NoError(t, n.Notice(context.Background(), notify.Notice{JobID: "job-1", Kind: notify.KindAnswer, Text: "All done.", At: deadline}))
	msgs := s.Messages()
	require.Len(t, msgs, 2)
	assert.Equal(t, msgs[0].TS, msgs[1].ThreadTS)
	assert.Equal(t, ":speech_balloon: *custos* job `job-1` answered (reply in this thread to send it the next message):\nAll done.", msgs[1].Text)
}
