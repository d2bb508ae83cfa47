package slack

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/slack-go/slack"
)

// A job is one thread in the channel: the bot's first post for the job (a
// call that waits, a notice) starts it, everything later (its other calls,
// its notices, its answers, the replies to people's messages) replies in
// it, and a person's reply in it is a message to the job. The thread is
// keyed by Slack itself: every post carries metadata naming the job, and
// the thread's first message is the oldest such message in the channel's
// history, so another worker, or this one after a restart, finds the same
// thread. The cache only saves the lookup.

// maxCachedThreads bounds the cache of job → thread.
const maxCachedThreads = 10000

// threads finds and starts jobs' threads in one channel.
type threads struct {
	api     *slack.Client
	channel string

	mu    sync.Mutex
	roots map[string]string      // job → its thread's first message
	locks map[string]*threadLock // one post at a time per job without a thread yet
}

type threadLock struct {
	sync.Mutex
	users int
}

func newThreads(api *slack.Client, channel string) *threads {
	return &threads{api: api, channel: channel, roots: map[string]string{}, locks: map[string]*threadLock{}}
}

// post runs fn with the job's thread ("" when the job has none yet: fn's
// post starts it, and ts is remembered as its first message). Posts of one
// job without a thread are serialised, so two calls of a new job waiting
// at once start one thread, not two.
func (t *threads) post(ctx context.Context, job string, fn func(thread string) (ts string, err error)) error {
	l := t.lock(job)
	defer t.unlock(job, l)
	root, err := t.root(ctx, job)
	if err != nil {
		return err
	}
	ts, err := fn(root)
	if err == nil && root == "" && ts != "" {
		t.remember(job, ts)
	}
	return err
}

func (t *threads) lock(job string) *threadLock {
	t.mu.Lock()
	l := t.locks[job]
	if l == nil {
		l = &threadLock{}
		t.locks[job] = l
	}
	l.users++
	t.mu.Unlock()
	l.Lock()
	return l
}

func (t *threads) unlock(job string, l *threadLock) {
	l.Unlock()
	t.mu.Lock()
	if l.users--; l.users == 0 {
		delete(t.locks, job)
	}
	t.mu.Unlock()
}

func (t *threads) remember(job, ts string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.roots) >= maxCachedThreads {
		clear(t.roots)
	}
	t.roots[job] = ts
}

// root is the first message of the job's thread, "" when the job has
// none: the oldest message of the channel's history whose metadata names
// the job (thread replies are not in the history, except those also sent
// to the channel, which are skipped).
func (t *threads) root(ctx context.Context, job string) (string, error) {
	t.mu.Lock()
	ts, ok := t.roots[job]
	t.mu.Unlock()
	if ok {
		return ts, nil
	}
	params := &slack.GetConversationHistoryParameters{ChannelID: t.channel, IncludeAllMetadata: true, Limit: 200}
	oldest := ""
	for range historyPages {
		res, err := t.api.GetConversationHistoryContext(ctx, params)
		if err != nil {
			return "", fmt.Errorf("slack conversations.history: looking for the thread of job %s: %w", job, err)
		}
		for _, m := range res.Messages { // newest first
			if ours(m.Msg) && jobOf(m.Msg) == job && (m.ThreadTimestamp == "" || m.ThreadTimestamp == m.Timestamp) {
				oldest = m.Timestamp
			}
		}
		if !res.HasMore || res.ResponseMetaData.NextCursor == "" {
			break
		}
		params.Cursor = res.ResponseMetaData.NextCursor
	}
	if oldest != "" {
		t.remember(job, oldest)
	}
	return oldest, nil
}

// findInThread looks for the message carrying the job's metadata key in
// the job's thread: "channel:ts", or "" when there is none.
func (t *threads) findInThread(ctx context.Context, job, key string) (string, error) {
	root, err := t.root(ctx, job)
	if err != nil || root == "" {
		return "", err
	}
	params := &slack.GetConversationRepliesParameters{ChannelID: t.channel, Timestamp: root, Limit: 200, IncludeAllMetadata: true}
	for range historyPages {
		msgs, more, cursor, err := t.api.GetConversationRepliesContext(ctx, params)
		var se slack.SlackErrorResponse
		if errors.As(err, &se) && se.Err == "thread_not_found" {
			return "", nil // the first message was deleted
		}
		if err != nil {
			return "", fmt.Errorf("slack conversations.replies: %w", err)
		}
		for _, m := range msgs {
			if ours(m.Msg) && jobOf(m.Msg) == job && m.Metadata.EventPayload["call"] == key {
				return t.channel + ":" + m.Timestamp, nil
			}
		}
		if !more || cursor == "" {
			return "", nil
		}
		params.Cursor = cursor
	}
	return "", nil
}

// threadJob is the job whose thread ts starts, "" when it is not a custos
// job's thread (another message, or one another app posted).
func (t *threads) threadJob(ctx context.Context, ts string, bot string) (string, error) {
	msgs, _, _, err := t.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
		ChannelID: t.channel, Timestamp: ts, Limit: 1, IncludeAllMetadata: true})
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && se.Err == "thread_not_found" {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("slack conversations.replies: reading thread %s: %w", ts, err)
	}
	if len(msgs) == 0 || msgs[0].Timestamp != ts || !ours(msgs[0].Msg) || msgs[0].User != bot {
		return "", nil
	}
	return jobOf(msgs[0].Msg), nil
}

// ours reports whether m carries custos' metadata.
func ours(m slack.Msg) bool { return m.Metadata.EventType == MetadataEventType }

func jobOf(m slack.Msg) string {
	job, _ := m.Metadata.EventPayload["job"].(string)
	return job
}
