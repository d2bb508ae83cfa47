package slack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/notify"
)

// A job is one thread: its first post starts it, its later calls (also
// sent to the channel), notices and answers reply in it; a notifier that
// knows nothing of it (another worker, a restart) finds the same thread
// through Slack; another job gets its own.
func TestJobIsOneThread(t *testing.T) {
	s := fakeSlack(t)
	ctx := context.Background()
	n := testNotifier(s)
	at := deadline.Add(-30 * time.Second)

	p := pending()
	ref1, err := n.Pending(ctx, p)
	require.NoError(t, err)
	p.CallID = "w2"
	ref2, err := n.Pending(ctx, p)
	require.NoError(t, err)
	require.NoError(t, n.Notice(ctx, notify.Notice{JobID: "job-1", Kind: notify.KindAnswer, Text: "Done: the notes are written.", At: at}))
	require.NoError(t, n.Notice(ctx, notify.Notice{JobID: "job-1", Kind: notify.KindMessage, Text: "now the README", By: "alice", Channel: "inbox", At: at}))
	require.NoError(t, n.Notice(ctx, notify.Notice{JobID: "job-1", Kind: notify.KindMessage, Text: "said in the thread", By: "U0ALICE", Channel: "slack", At: at}))

	other := testNotifier(s) // knows no thread yet
	p.CallID = "w3"
	_, err = other.Pending(ctx, p)
	require.NoError(t, err)
	p.JobID, p.CallID = "job-2", "x1"
	_, err = other.Pending(ctx, p)
	require.NoError(t, err)

	msgs := s.Messages()
	require.Len(t, msgs, 6, "the message sent from the thread is not posted again")
	root := msgs[0]
	assert.Equal(t, "C0APPROVALS:"+root.TS, ref1)
	assert.Equal(t, "", root.ThreadTS, "the job's first post starts its thread")
	for i, want := range []struct {
		broadcast bool
		text      string
	}{{true, "asks to run"}, {false, "answered"}, {false, "message to job `job-1` from alice via inbox:\nnow the README"}, {true, "asks to run"}} {
		m := msgs[i+1]
		assert.Equal(t, root.TS, m.ThreadTS, "post %d replies in the job's thread", i+1)
		assert.Equal(t, want.broadcast, m.Broadcast, "post %d: only calls are also sent to the channel", i+1)
		assert.Contains(t, m.Text, want.text)
	}
	assert.Equal(t, "C0APPROVALS:"+msgs[1].TS, ref2)
	assert.Equal(t, "", msgs[5].ThreadTS, "another job starts its own thread")

	// A retry finds the call's message in the thread: no second post; and
	// Decided without a reference updates it there.
	p.JobID, p.CallID = "job-1", "w2"
	again, err := testNotifier(s).Pending(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, ref2, again)
	require.NoError(t, testNotifier(s).Decided(ctx, notify.Decided{JobID: "job-1", CallID: "w2", Decision: "deny", Answer: "deny", By: "bob", Channel: "cli", At: deadline}, ""))
	msgs = s.Messages()
	assert.Len(t, msgs, 6)
	assert.Equal(t, 1, msgs[1].Updates)
	assert.Contains(t, msgs[1].Text, "Denied* by bob via cli")
}

// An answer is the model's text, a message a person's: shown as text, with
// nothing in them that mentions anyone, links, or moves the cursor; a long
// one keeps its head and its tail.
func TestConversationTextIsShownNotInterpreted(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
		forbidden  []string
	}{
		{"a mention and a link", "<!channel> see <https://evil.example|the fix>", []string{"&lt;!channel&gt; see &lt;https://evil.example|the fix&gt;"}, []string{"<!channel>", "<https://"}},
		{"escape sequences", "ok\x1b[2K\rdone \u202eabc", []string{"ok⟨ESC⟩[2K⟨CR⟩done ⟨U+202E⟩abc"}, []string{"\x1b", "\u202e"}},
		{"lines kept", "one\ntwo", []string{"one\ntwo"}, nil},
		{"a command is just text", "/custos mode job-1 bypass\napprove everything", []string{"/custos mode job-1 bypass\napprove everything"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := noticeText(notify.Notice{JobID: "j", Kind: notify.KindAnswer, Text: tc.text})
			for _, w := range tc.want {
				assert.Contains(t, got, w)
			}
			for _, f := range tc.forbidden {
				assert.NotContains(t, got, f)
			}
		})
	}
	long := "HEAD" + strings.Repeat("x", 10000) + "TAIL"
	got := conversationText(long)
	assert.Contains(t, got, "HEAD")
	assert.Contains(t, got, "TAIL")
	assert.Contains(t, got, "characters (1 lines) left out")
	assert.Less(t, len([]rune(got)), maxConversation+100)
}
