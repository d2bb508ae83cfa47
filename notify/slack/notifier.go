package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"go.temporal.io/sdk/activity"

	"github.com/custos-dev/custos/notify"
)

// Notifier posts approval requests to the channel and updates them with
// the outcome.
type Notifier struct {
	api     *slack.Client
	channel string
	threads *threads
}

// NewNotifier builds the notifier on a configured Web API client.
func NewNotifier(api *slack.Client, channel string) *Notifier {
	return &Notifier{api: api, channel: channel, threads: newThreads(api, channel)}
}

// Name is the key of the message references.
func (n *Notifier) Name() string { return "slack" }

// Pending posts one message for the call, in the job's thread (also sent
// to the channel: a call waits for whoever watches it), and returns
// "channel:ts". Every message carries metadata naming the job and call; a
// retried activity first looks for that message, so a post whose response
// was lost is not posted again.
func (n *Notifier) Pending(ctx context.Context, p notify.Pending) (string, error) {
	if !activity.IsActivity(ctx) || activity.GetInfo(ctx).Attempt > 1 {
		ref, err := n.find(ctx, p.JobID, p.CallID, p.AskedAt)
		if err != nil {
			return "", err
		}
		if ref != "" {
			return ref, nil
		}
	}
	text, blocks := pendingMessage(p)
	var ref string
	err := n.threads.post(ctx, p.JobID, func(thread string) (string, error) {
		opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(metadata(p.JobID, p.CallID))}
		if thread != "" {
			opts = append(opts, slack.MsgOptionTS(thread), slack.MsgOptionBroadcast())
		}
		var channel, ts string
		err := politely(ctx, func() (err error) {
			channel, ts, err = n.api.PostMessageContext(ctx, n.channel, opts...)
			return err
		})
		if err != nil {
			return "", n.apiError("chat.postMessage", err)
		}
		ref = channel + ":" + ts
		return ts, nil
	})
	return ref, err
}

// Decided replaces the message's blocks with the outcome, removing the
// buttons. Without a reference (the post failed or its result was lost) it
// looks for the message; with none found there is nothing to update.
func (n *Notifier) Decided(ctx context.Context, d notify.Decided, ref string) error {
	if ref == "" {
		var err error
		if ref, err = n.find(ctx, d.JobID, d.CallID, time.Time{}); err != nil || ref == "" {
			return err
		}
	}
	channel, ts, ok := strings.Cut(ref, ":")
	if !ok || channel == "" || ts == "" {
		return fmt.Errorf("slack: malformed message reference %q", ref)
	}
	text, blocks := decidedMessage(d)
	err := politely(ctx, func() error {
		_, _, _, err := n.api.UpdateMessageContext(ctx, channel, ts,
			slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(metadata(d.JobID, d.CallID)))
		return err
	})
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && (se.Err == "message_not_found" || se.Err == "cant_update_message") {
		return nil // someone deleted it: nothing left to update
	}
	if err != nil {
		return n.apiError("chat.update", err)
	}
	return nil
}

// historyWindow is how far back (before the call started waiting) and how
// many pages of history a retried post searches for its message.
const (
	historySkew  = 5 * time.Minute
	historyPages = 10
)

// find looks for the message of job/call in the job's thread, then in
// the channel's history (where a message posted before jobs had threads
// is).
func (n *Notifier) find(ctx context.Context, job, call string, since time.Time) (string, error) {
	if ref, err := n.threads.findInThread(ctx, job, call); err != nil || ref != "" {
		if err != nil {
			return "", n.apiError("conversations.replies", err)
		}
		return ref, nil
	}
	params := &slack.GetConversationHistoryParameters{ChannelID: n.channel, IncludeAllMetadata: true, Limit: 200}
	if !since.IsZero() {
		// The worker's clock may run ahead of Slack's: never look for a
		// message only in Slack's future.
		if now := time.Now(); since.After(now) {
			since = now
		}
		params.Oldest = fmt.Sprintf("%d.000000", since.Add(-historySkew).Unix())
	}
	for range historyPages {
		res, err := n.api.GetConversationHistoryContext(ctx, params)
		if err != nil {
			return "", n.apiError("conversations.history", err)
		}
		for _, m := range res.Messages {
			if m.Metadata.EventType == MetadataEventType &&
				m.Metadata.EventPayload["job"] == job && m.Metadata.EventPayload["call"] == call {
				return n.channel + ":" + m.Timestamp, nil
			}
		}
		if !res.HasMore || res.ResponseMetaData.NextCursor == "" {
			return "", nil
		}
		params.Cursor = res.ResponseMetaData.NextCursor
	}
	return "", nil
}

// maxPoliteWait is the longest Retry-After waited for inside the activity;
// a longer one fails the attempt and Temporal's backoff takes over.
const maxPoliteWait = 5 * time.Second

// politely runs call and, when Slack answers 429 with a short Retry-After,
// waits that long (a rate-limited request was not carried out, so sending
// it again is safe) and tries once more.
func politely(ctx context.Context, call func() error) error {
	err := call()
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter > maxPoliteWait {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < rl.RetryAfter+time.Second {
		return err
	}
	select {
	case <-ctx.Done():
		return err
	case <-time.After(rl.RetryAfter):
	}
	return call()
}

func metadata(job, call string) slack.SlackMetadata {
	return slack.SlackMetadata{EventType: MetadataEventType, EventPayload: map[string]any{"job": job, "call": call}}
}

// apiError says what a failed Web API call means for the operator. All of
// them are returned, so Temporal retries with backoff (a rate limit clears,
// a fixed token or an invited bot works on the next attempt) until the
// notification's schedule-to-close timeout.
func (n *Notifier) apiError(method string, err error) error {
	var rl *slack.RateLimitedError
	var se slack.SlackErrorResponse
	switch {
	case errors.As(err, &rl):
		return fmt.Errorf("slack %s: rate limited by Slack, retry after %s: %w", method, rl.RetryAfter, err)
	case errors.As(err, &se):
		switch se.Err {
		case "ratelimited":
			return fmt.Errorf("slack %s: rate limited by Slack: %w", method, err)
		case "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired":
			return fmt.Errorf("slack %s: Slack refused the bot token (%s): check SLACK_BOT_TOKEN: %w", method, se.Err, err)
		case "channel_not_found", "not_in_channel", "is_archived":
			return fmt.Errorf("slack %s: cannot post to channel %s (%s): check SLACK_CHANNEL and invite the bot to it: %w", method, n.channel, se.Err, err)
		case "missing_scope":
			return fmt.Errorf("slack %s: the app lacks a scope (needed: %s): %w", method, se.Needed, err)
		}
	}
	return fmt.Errorf("slack %s: %w", method, err)
}

// Notice posts one message in the job's thread: the job waits for the
// model endpoint and what to fix, or it goes on again; the job's answer; a
// message someone sent the job from another channel (one sent from Slack
// is in the thread already, and the bot replied to it there). A retried
// activity first looks for the message it may have posted already.
func (n *Notifier) Notice(ctx context.Context, nt notify.Notice) error {
	if nt.Kind == notify.KindMessage && nt.Channel == "slack" {
		return nil
	}
	key := "notice " + nt.Kind + " " + nt.At.UTC().Format(time.RFC3339Nano)
	if nt.Kind == notify.KindMessage {
		key += " " + nt.By + " " + shortHash(nt.Text) // two messages may share a time
	}
	if activity.IsActivity(ctx) && activity.GetInfo(ctx).Attempt > 1 {
		if ref, err := n.find(ctx, nt.JobID, key, nt.At); err != nil || ref != "" {
			return err
		}
	}
	text := noticeText(nt)
	return n.threads.post(ctx, nt.JobID, func(thread string) (string, error) {
		opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionMetadata(metadata(nt.JobID, key))}
		if thread != "" {
			opts = append(opts, slack.MsgOptionTS(thread))
		}
		var ts string
		err := politely(ctx, func() (err error) {
			_, ts, err = n.api.PostMessageContext(ctx, n.channel, opts...)
			return err
		})
		if err != nil {
			return "", n.apiError("chat.postMessage", err)
		}
		return ts, nil
	})
}

// Escalate posts a step of approval.escalation: the call's message again,
// with its buttons, under a line saying nobody has answered, to the step's
// channel (To: C0123…, #name) or to the notifier's channel with the
// step's mention (To: <!subteam^S0123>, <@U0123>, <!here>). A retried
// activity first looks for the message it may have posted already.
func (n *Notifier) Escalate(ctx context.Context, e notify.Escalation) error {
	channel, mention := n.channel, ""
	switch {
	case strings.HasPrefix(e.To, "<"):
		mention = e.To + " "
	case e.To != "":
		channel = e.To
	}
	key := fmt.Sprintf("escalation %s %d", e.CallID, e.Step)
	if activity.IsActivity(ctx) && activity.GetInfo(ctx).Attempt > 1 && channel == n.channel {
		if ref, err := n.find(ctx, e.JobID, key, e.AskedAt); err != nil || ref != "" {
			return err
		}
	}
	text, blocks := pendingMessage(e.Pending)
	head := fmt.Sprintf("%s:rotating_light: Nobody has answered this call for %s; it is denied at %s unless someone does.",
		mention, e.After, e.Deadline.UTC().Format("15:04:05 UTC"))
	blocks = append([]slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, head, false, false), nil, nil)}, blocks...)
	err := politely(ctx, func() error {
		_, _, err := n.api.PostMessageContext(ctx, channel, slack.MsgOptionText(head+"\n"+text, false),
			slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(metadata(e.JobID, key)))
		return err
	})
	if err != nil {
		return n.apiError("chat.postMessage", err)
	}
	return nil
}
