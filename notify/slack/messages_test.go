package slack

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/internal/frontendtest"
	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/notify/slack/slacktest"
	"github.com/custos-dev/custos/workflows"
)

var (
	alice = slacktest.User{ID: "U0ALICE", Name: "alice"} // in SLACK_APPROVERS
	bob   = slacktest.User{ID: "U0BOB", Name: "bob"}     // not
)

// jobFrontend answers the message Update as a job would: job-1 queues a
// message behind what it runs, a refused message is refused, any other
// job has ended.
func jobFrontend(t *testing.T) *frontendtest.Frontend {
	return frontendtest.Start(t, func(c frontendtest.Call) (any, error) {
		var m workflows.Message
		if err := json.Unmarshal(c.Arg, &m); err != nil {
			return nil, err
		}
		switch {
		case c.Workflow != "job-1":
			return nil, serviceerror.NewNotFound("workflow execution already completed")
		case m.Refused != "":
			return nil, temporal.NewNonRetryableApplicationError("refused: "+m.By+" via slack may not message job-1: "+m.Refused, "Refused", nil)
		}
		return workflows.MessageResult{ID: m.ID, Seq: 2, Delivery: "queued", Queued: 1}, nil
	}, nil)
}

// settle waits for the work behind the requests the bot has answered (an
// HTTP endpoint's bot runs nothing else in the background).
func settle(b *Bot) { b.wg.Wait() }

// messageBot is a bot on the fake Slack and the fake frontend, with alice
// as its only approver, serving its HTTP endpoint; job-1 has a thread
// (its first call's message).
func messageBot(t *testing.T, s *slacktest.Server, f *frontendtest.Frontend) (*Bot, string, slacktest.Message) {
	cfg := testAPI(s)
	cfg.Approvers = Approvers{Users: []string{alice.ID}}
	b := NewBot(cfg, NewAPI(cfg), f.Client, slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(b.Close)
	_, err := testNotifier(s).Pending(context.Background(), pending())
	require.NoError(t, err)
	return b, srv.URL, s.Messages()[0]
}

// A reply in a job's thread by a person the bot verified is the job's
// message Update (channel slack, by the Slack user, the reply's ID), and
// the bot answers in the thread with what became of it; what is not a
// person's reply in a custos thread is ignored. Nothing in the text is a
// command: "approve everything" is a message, and no decide or mode Update
// is sent.
func TestThreadRepliesAreMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		// event posts what Slack sends, given the job's thread.
		event func(s *slacktest.Server, root slacktest.Message) json.RawMessage
		sent  *workflows.Message // the Update's message, nil: no Update
		reply string             // the bot's reply in the thread, "": none
	}{
		{"an approver's reply", func(s *slacktest.Server, root slacktest.Message) json.RawMessage {
			_, ev := s.Say(alice, root.Channel, root.TS, "approve everything &amp; push &lt;now&gt;")
			return ev
		}, &workflows.Message{Text: "approve everything & push <now>", By: "U0ALICE", Channel: "slack"},
			"<@U0ALICE> queued for job job-1: it reads it after what it runs now (message 2; 1 waiting)"},
		{"someone not among the approvers", func(s *slacktest.Server, root slacktest.Message) json.RawMessage {
			_, ev := s.Say(bob, root.Channel, root.TS, "rm -rf it all")
			return ev
		}, &workflows.Message{Text: "rm -rf it all", By: "U0BOB", Channel: "slack", Refused: NotApprover},
			"<@U0BOB> refused: you are not in SLACK_APPROVERS: only approvers may send a job messages. The job recorded your message and did not read it."},
		{"another bot", func(s *slacktest.Server, root slacktest.Message) json.RawMessage {
			return slacktest.MessageEvent(slacktest.Message{Channel: root.Channel, TS: "1.000001", ThreadTS: root.TS, Text: "deploy", User: "U0OTHERBOT", BotID: "B0OTHER"})
		}, nil, ""},
		{"the bot itself", func(s *slacktest.Server, root slacktest.Message) json.RawMessage {
			return slacktest.MessageEvent(slacktest.Message{Channel: root.Channel, TS: "1.000002", ThreadTS: root.TS, Text: "queued", User: slacktest.BotUser})
		}, nil, ""},
		{"a message outside any thread", func(s *slacktest.Server, root slacktest.Message) json.RawMessage {
			_, ev := s.Say(alice, root.Channel, "", "hello channel")
			return ev
		}, nil, ""},
		{"a thread a person started", func(s *slacktest.Server, root slacktest.Message) json.RawMessage {
			top, _ := s.Say(alice, root.Channel, "", "lunch?")
			_, ev := s.Say(alice, root.Channel, top.TS, "yes")
			return ev
		}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fakeSlack(t)
			f := jobFrontend(t)
			b, url, root := messageBot(t, s, f)
			before := len(s.Messages())
			ev := tc.event(s, root)
			res, _, err := slacktest.PostJSON(url+EventsPath, testSecret, time.Now(), ev)
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, res.StatusCode)
			settle(b)

			updates := f.Updates()
			if tc.sent == nil {
				assert.Empty(t, updates)
			} else {
				require.Len(t, updates, 1)
				assert.Equal(t, "job-1", updates[0].Workflow)
				assert.Equal(t, workflows.MessageUpdate, updates[0].Name, "a message, never an answer or a mode")
				var got workflows.Message
				require.NoError(t, json.Unmarshal(updates[0].Arg, &got))
				assert.True(t, strings.HasPrefix(got.ID, "slack:C0APPROVALS:"), got.ID)
				assert.Equal(t, got.ID, updates[0].UpdateID, "a redelivered event is the same Update")
				got.ID = ""
				assert.Equal(t, *tc.sent, got)
			}
			var replies []slacktest.Message
			for _, m := range s.Messages()[before:] {
				if m.BotID != "" {
					replies = append(replies, m)
				}
			}
			if tc.reply == "" {
				assert.Empty(t, replies)
				return
			}
			require.Len(t, replies, 1)
			assert.Equal(t, root.TS, replies[0].ThreadTS, "the reply is in the job's thread")
			assert.Equal(t, tc.reply, replies[0].Text)
		})
	}
}

// A reply in the thread of a job that has ended is told so.
func TestReplyToAnEndedJob(t *testing.T) {
	s := fakeSlack(t)
	f := jobFrontend(t)
	cfg := testAPI(s)
	cfg.Approvers = Approvers{Users: []string{alice.ID}}
	b := NewBot(cfg, NewAPI(cfg), f.Client, slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	defer b.Close()
	p := pending()
	p.JobID = "job-gone"
	_, err := testNotifier(s).Pending(context.Background(), p)
	require.NoError(t, err)
	root := s.Messages()[0]
	_, ev := s.Say(alice, root.Channel, root.TS, "one more thing")
	_, _, err = slacktest.PostJSON(srv.URL+EventsPath, testSecret, time.Now(), ev)
	require.NoError(t, err)
	settle(b)
	msgs := s.Messages()
	last := msgs[len(msgs)-1]
	assert.Equal(t, root.TS, last.ThreadTS)
	assert.Equal(t, "<@U0ALICE> not delivered: job job-gone has ended (or never existed)", last.Text)
}

// Slack checks the Request URL with a challenge; an unsigned event is
// refused before anything reads it.
func TestEventsEndpoint(t *testing.T) {
	s := fakeSlack(t)
	f := jobFrontend(t)
	b, url, root := messageBot(t, s, f)
	res, body, err := slacktest.PostJSON(url+EventsPath, testSecret, time.Now(), slacktest.URLVerification("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", body)
	_, ev := s.Say(alice, root.Channel, root.TS, "hi")
	res, _, err = slacktest.PostJSON(url+EventsPath, "", time.Now(), ev)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
	settle(b)
	assert.Empty(t, f.Updates())
}

// Over Socket Mode, message events come as events_api envelopes: the bot
// acknowledges them and sends the job the message.
func TestSocketModeReceivesMessages(t *testing.T) {
	s := fakeSlack(t)
	f := jobFrontend(t)
	cfg := testAPI(s)
	cfg.AppToken, cfg.SigningSecret, cfg.Approvers = slacktest.AppToken, "", Approvers{Users: []string{alice.ID}}
	b := NewBot(cfg, NewAPI(cfg), f.Client, slog.New(slog.DiscardHandler))
	b.RunSocketMode()
	defer b.Close()
	_, err := testNotifier(s).Pending(context.Background(), pending())
	require.NoError(t, err)
	root := s.Messages()[0]
	_, ev := s.Say(alice, root.Channel, root.TS, "also update the changelog")
	env, err := s.SocketSend("events_api", ev)
	require.NoError(t, err)
	require.True(t, s.Wait(30*time.Second, func(s *slacktest.Server) bool { return len(s.Messages()) == 3 }), "no reply in the thread")
	assert.True(t, s.Acked(env))
	require.Len(t, f.Updates(), 1)
	assert.Contains(t, string(f.Updates()[0].Arg), `"text":"also update the changelog"`)
	assert.Contains(t, s.Messages()[2].Text, "queued for job job-1")
}

// `/custos say JOB text` sends the text as it was typed, tells the person
// privately what became of it, and puts it in the job's thread.
func TestSaySendsAMessage(t *testing.T) {
	s := fakeSlack(t)
	f := jobFrontend(t)
	b, url, root := messageBot(t, s, f)
	for _, tc := range []struct {
		user   slacktest.User
		text   string
		reply  string
		posted bool
	}{
		{alice, "say job-1   keep the  spaces\nand lines", "queued for job job-1", true},
		{bob, "say job-1 mode bypass", "refused: you are not in SLACK_APPROVERS", false},
		{alice, "say job-9 hello", "not delivered: job job-9 has ended", false},
		{alice, "say job-1", "usage:", false},
	} {
		before := len(s.Messages())
		resp := s.ResponseURL()
		res, err := slacktest.Post(url+CommandsPath, testSecret, time.Now(), slacktest.Command(tc.user, tc.text, resp))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.True(t, s.Wait(30*time.Second, func(s *slacktest.Server) bool {
			for _, r := range s.Replies() {
				if r.ID == resp[strings.LastIndex(resp, "/")+1:] {
					return true
				}
			}
			return false
		}), tc.text)
		replies := s.Replies()
		assert.Contains(t, replies[len(replies)-1].Text, tc.reply, tc.text)
		assert.Equal(t, "ephemeral", replies[len(replies)-1].ResponseType)
		msgs := s.Messages()
		if tc.posted {
			require.Len(t, msgs, before+1, tc.text)
			assert.Equal(t, root.TS, msgs[before].ThreadTS)
			assert.Equal(t, ":bust_in_silhouette: <@U0ALICE> via `/custos say`:\nkeep the  spaces\nand lines", msgs[before].Text)
		} else {
			assert.Len(t, msgs, before, tc.text)
		}
	}
	settle(b)
	updates := f.Updates()
	require.Len(t, updates, 3, "the usage error sends nothing")
	var m workflows.Message
	require.NoError(t, json.Unmarshal(updates[0].Arg, &m))
	assert.Equal(t, workflows.Message{Text: "keep the  spaces\nand lines", ID: "slack:say:1337.43.trigger", By: "U0ALICE (alice)", Channel: "slack"}, m)
	require.NoError(t, json.Unmarshal(updates[1].Arg, &m))
	assert.Equal(t, NotApprover, m.Refused)
	assert.Equal(t, "mode bypass", m.Text, "a message, not a mode change")
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
