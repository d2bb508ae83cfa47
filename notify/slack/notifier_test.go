package slack

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/notify/slack/slacktest"
)

func testNotifier(s *slacktest.Server) *Notifier {
	cfg := testAPI(s)
	return NewNotifier(NewAPI(cfg), cfg.Channel)
}

func TestNotifierPostsOnceAndUpdates(t *testing.T) {
	s := fakeSlack(t)
	n := testNotifier(s)
	ctx := context.Background()
	p := pending()
	ref, err := n.Pending(ctx, p)
	require.NoError(t, err)
	msgs := s.Messages()
	require.Len(t, msgs, 1)
	assert.Equal(t, "C0APPROVALS:"+msgs[0].TS, ref)
	var md map[string]any
	require.NoError(t, json.Unmarshal(msgs[0].Metadata, &md))
	assert.Equal(t, map[string]any{"event_type": MetadataEventType, "event_payload": map[string]any{"job": "job-1", "call": "w1"}}, md)
	post := s.Calls("chat.postMessage")[0]
	assert.Equal(t, "xoxb-test", post.Token)

	// Called again (a retry outside an activity always looks first): the
	// same reference, no second post.
	ref2, err := n.Pending(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, ref, ref2)
	assert.Len(t, s.Messages(), 1)
	history := s.Calls("conversations.history")
	require.NotEmpty(t, history)
	assert.Equal(t, "1", history[0].Params["include_all_metadata"])

	// Another call of the same job gets its own message.
	p.CallID = "w2"
	ref3, err := n.Pending(ctx, p)
	require.NoError(t, err)
	assert.NotEqual(t, ref, ref3)
	assert.Len(t, s.Messages(), 2)

	require.NoError(t, n.Decided(ctx, notify.Decided{JobID: "job-1", CallID: "w1", Tool: "Write", Summary: "Write notes.md",
		Decision: "deny", Answer: "timeout", At: deadline}, ref))
	m := s.Messages()[0]
	assert.Equal(t, 1, m.Updates)
	assert.Contains(t, m.Text, "Denied by the timer")
	assert.NotContains(t, string(m.Blocks), ActionAllow, "buttons removed")

	// Without a reference Decided finds the message by its metadata.
	require.NoError(t, n.Decided(ctx, notify.Decided{JobID: "job-1", CallID: "w2", Decision: "allow", Answer: "allow", By: "bob", Channel: "cli", At: deadline}, ""))
	assert.Contains(t, s.Messages()[1].Text, "Allowed* by bob via cli")
}

// The fake stores the message and drops the response: the post failed as
// far as the notifier knows; the retry finds the message instead of
// posting a second one.
func TestNotifierRetryAfterLostResponse(t *testing.T) {
	s := fakeSlack(t)
	n := testNotifier(s)
	s.FailNext("chat.postMessage", slacktest.FailDropResponse)
	_, err := n.Pending(context.Background(), pending())
	require.Error(t, err)
	require.Len(t, s.Messages(), 1, "the message was stored")
	ref, err := n.Pending(context.Background(), pending())
	require.NoError(t, err)
	assert.Len(t, s.Messages(), 1, "not posted twice")
	assert.Equal(t, "C0APPROVALS:"+s.Messages()[0].TS, ref)
}

// A 429 with a short Retry-After is waited out inside the attempt.
func TestNotifierWaitsOutARateLimit(t *testing.T) {
	s := fakeSlack(t)
	n := testNotifier(s)
	s.FailNext("chat.postMessage", slacktest.FailRateLimited)
	start := time.Now()
	_, err := n.Pending(context.Background(), pending())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), time.Second, "Retry-After: 1 was honoured")
	assert.Len(t, s.Calls("chat.postMessage"), 2)
	assert.Len(t, s.Messages(), 1)
}

func TestNotifierErrors(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(s *slacktest.Server, cfg *Config)
		errHas string
	}{
		{"rate limited twice", func(s *slacktest.Server, _ *Config) {
			s.FailNext("chat.postMessage", slacktest.FailRateLimited, slacktest.FailRateLimited)
		}, "rate limited by Slack, retry after 1s"},
		{"slack down", func(s *slacktest.Server, _ *Config) { s.FailNext("chat.postMessage", slacktest.Fail500) }, "500"},
		{"bad token", func(_ *slacktest.Server, cfg *Config) { cfg.BotToken = "xoxb-wrong" }, "check SLACK_BOT_TOKEN"},
		{"unknown channel", func(_ *slacktest.Server, cfg *Config) { cfg.Channel = "C0NOWHERE" }, "check SLACK_CHANNEL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := fakeSlack(t)
			cfg := testAPI(s)
			tc.setup(s, &cfg)
			n := NewNotifier(NewAPI(cfg), cfg.Channel)
			p := pending()
			_, err := n.Pending(context.Background(), p)
			require.ErrorContains(t, err, tc.errHas)
			assert.Empty(t, s.Messages())
		})
	}
}
