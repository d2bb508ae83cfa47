package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/workflows/jobapi"
)

var deadline = time.Date(2026, 11, 30, 14, 3, 7, 0, time.UTC)

func pending() notify.Pending {
	return notify.Pending{JobID: "job-1", CallID: "w1", Tool: "Write", Summary: "Write notes.md",
		Input: json.RawMessage(`{"file_path":"notes.md","content":"hi"}`), Mode: "default",
		Reason: "Write asks in default mode", Preview: "--- a/notes.md\n+++ b/notes.md\n@@ -0,0 +1 @@\n+hi",
		AskedAt: deadline.Add(-time.Minute), Deadline: deadline}
}

// blocksJSON renders blocks as Slack receives them.
func blocksJSON(t *testing.T, blocks []slack.Block) string {
	t.Helper()
	out, err := json.Marshal(blocks)
	require.NoError(t, err)
	return string(out)
}

// actionIDs are the action IDs of every button of blocks, in order.
func actionIDs(t *testing.T, blocks []slack.Block) []string {
	t.Helper()
	var got []struct {
		Elements []struct {
			ActionID string `json:"action_id"`
		} `json:"elements"`
		Accessory *struct {
			ActionID string `json:"action_id"`
		} `json:"accessory"`
	}
	require.NoError(t, json.Unmarshal([]byte(blocksJSON(t, blocks)), &got))
	var ids []string
	for _, b := range got {
		if b.Accessory != nil {
			ids = append(ids, b.Accessory.ActionID)
		}
		for _, e := range b.Elements {
			ids = append(ids, e.ActionID)
		}
	}
	return ids
}

// Every message offers only the answers the call can take: a call that
// needs several approvals has no Always, Never or grant button, which the
// job would refuse.
func TestPendingMessageOffersOnlyWhatCounts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rule   string
		quorum bool
		want   []string
	}{
		{"a rule covers the call", "Write(notes.md)", false, []string{ActionGrant, ActionAllow, ActionDeny, ActionAlways, ActionNever, ActionView}},
		{"no rule: no grant", "", false, []string{ActionAllow, ActionDeny, ActionAlways, ActionNever, ActionView}},
		{"N of M, with a rule", "Bash(git push:*)", true, []string{ActionAllow, ActionDeny, ActionView}},
		{"N of M, no rule", "", true, []string{ActionAllow, ActionDeny, ActionView}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pending()
			p.Rule, p.Quorum = tc.rule, tc.quorum
			_, blocks := pendingMessage(p)
			assert.Equal(t, tc.want, actionIDs(t, blocks))
			if tc.quorum {
				assert.Contains(t, blocksJSON(t, blocks), "Needs several approvals")
			}
		})
	}
}

func TestPendingMessageButtons(t *testing.T) {
	_, blocks := pendingMessage(pending())
	var got []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			ActionID string                `json:"action_id"`
			Value    string                `json:"value"`
			Style    string                `json:"style"`
			Text     struct{ Text string } `json:"text"`
		} `json:"elements"`
	}
	require.NoError(t, json.Unmarshal([]byte(blocksJSON(t, blocks)), &got))
	last := got[len(got)-1]
	require.Equal(t, "actions", last.Type)
	var ids, labels, styles []string
	for _, e := range last.Elements {
		ids, labels, styles = append(ids, e.ActionID), append(labels, e.Text.Text), append(styles, e.Style)
		var v ButtonValue
		require.NoError(t, json.Unmarshal([]byte(e.Value), &v))
		assert.Equal(t, ButtonValue{Job: "job-1", Call: "w1"}, v)
	}
	assert.Equal(t, []string{ActionAllow, ActionDeny, ActionAlways, ActionNever, ActionView}, ids)
	assert.Equal(t, []string{"Allow", "Deny", "Always", "Never", "View input"}, labels)
	assert.Equal(t, []string{"primary", "danger", "", "", ""}, styles)
}

func TestPendingMessageContent(t *testing.T) {
	text, blocks := pendingMessage(pending())
	js := blocksJSON(t, blocks)
	// The deadline in Slack's date formatting, with a UTC fallback.
	date := fmt.Sprintf("<!date^%d^{date_short_pretty} at {time}|2026-11-30 14:03 UTC>", deadline.Unix())
	assert.Contains(t, text, date)
	assert.Contains(t, js, strings.Trim(mustJSON(date), `"`))
	for _, want := range []string{"job-1", "`Write notes.md`", "Write asks in default mode", "+hi", "```"} {
		assert.Contains(t, js, strings.Trim(mustJSON(want), `"`))
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestSlackDate(t *testing.T) {
	assert.Equal(t, "<!date^1796047387^{time}|2026-11-30 14:03 UTC>", slackDate(deadline, "{time}"))
	assert.Equal(t, "unknown", slackDate(time.Time{}, "{time}"))
	// The fallback is UTC whatever the zone of the time given.
	assert.Contains(t, slackDate(deadline.In(time.FixedZone("X", 3600)), "{time}"), "|2026-11-30 14:03 UTC>")
}

func TestPreviewTruncation(t *testing.T) {
	p := pending()
	var b strings.Builder
	for i := range 500 {
		fmt.Fprintf(&b, "+line %03d ünïcode\n", i)
	}
	p.Preview = strings.TrimSuffix(b.String(), "\n")
	_, blocks := pendingMessage(p)
	section := blocks[2].(*slack.SectionBlock)
	got := section.Text.Text
	assert.LessOrEqual(t, utf8.RuneCountInString(got), 3000, "Block Kit's section text limit")
	assert.True(t, utf8.ValidString(got), "cut on a rune boundary")
	// Head and tail, the count naming exactly what was left out: the end
	// of the preview never disappears.
	body := strings.TrimSuffix(strings.TrimPrefix(got, "*What it would do*\n```"), "```")
	head, rest, ok := strings.Cut(body, "\n⟨… ")
	require.True(t, ok, got)
	count, tail, ok := strings.Cut(rest, " …⟩\n")
	require.True(t, ok, got)
	require.True(t, strings.HasPrefix(p.Preview, head))
	require.True(t, strings.HasSuffix(p.Preview, tail))
	assert.True(t, strings.HasSuffix(got, "+line 499 ünïcode```"), "the last line is shown")
	middle := p.Preview[len(head) : len(p.Preview)-len(tail)]
	assert.Equal(t, fmt.Sprintf("%d characters (%d lines) left out", utf8.RuneCountInString(middle), strings.Count(middle, "\n")+1), count)
	assert.Greater(t, len(tail), 500, "a fair share of the budget goes to the tail")

	// A short preview is shown whole, with no count.
	_, blocks = pendingMessage(pending())
	assert.NotContains(t, blocks[2].(*slack.SectionBlock).Text.Text, "left out")
}

// Tool input is data: it can neither mention people, fake a link nor close
// its code block.
func TestRenderEscapes(t *testing.T) {
	p := pending()
	p.Summary = "<!channel> <https://evil.example|notes.md> & more"
	p.Preview = "```\n<!here> *bold*\n```"
	_, blocks := pendingMessage(p)
	js := blocksJSON(t, blocks)
	for _, bad := range []string{"<!channel>", "<!here>", "<https://evil"} {
		assert.NotContains(t, js, strings.Trim(mustJSON(bad), `"`))
	}
	assert.Contains(t, js, "\\u0026lt;!channel\\u0026gt;") // &lt;!channel&gt; as JSON encodes it
	preview := blocks[2].(*slack.SectionBlock).Text.Text
	assert.Equal(t, 2, strings.Count(preview, "```"), "only the block's own fences: %q", preview)
}

func TestDecidedMessage(t *testing.T) {
	at := deadline
	cases := []struct {
		name string
		d    notify.Decided
		want []string
	}{
		{"allowed in slack", notify.Decided{Decision: "allow", Answer: "allow", By: "U0ALICE (alice)", Channel: "slack"},
			[]string{"*Allowed* by <@U0ALICE> via slack"}},
		{"denied from the cli", notify.Decided{Decision: "deny", Answer: "deny", By: "bob", Channel: "cli"},
			[]string{"*Denied* by bob via cli"}},
		{"always", notify.Decided{Decision: "allow", Answer: "always", By: "U0ALICE", Channel: "slack", Rule: "Write(notes.md)"},
			[]string{"*Allowed* (always) by <@U0ALICE> via slack", "Rule learned: `Write(notes.md)`"}},
		{"timer", notify.Decided{Decision: "deny", Answer: "timeout"}, []string{"*Denied by the timer*"}},
		{"canceled", notify.Decided{Decision: "deny", Answer: "canceled"}, []string{"*Denied: the job was canceled*"}},
		{"a name that is not an ID is not a mention", notify.Decided{Decision: "allow", Answer: "allow", By: "<!channel>", Channel: "slack"},
			[]string{"by &lt;!channel&gt; via slack"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.d.JobID, tc.d.CallID, tc.d.Tool, tc.d.Summary, tc.d.At = "job-1", "w1", "Write", "Write notes.md", at
			text, blocks := decidedMessage(tc.d)
			js := blocksJSON(t, blocks)
			assert.NotContains(t, js, `"actions"`, "the buttons are removed")
			for _, w := range tc.want {
				assert.Contains(t, text, w)
				assert.Contains(t, js, strings.Trim(mustJSON(w), `"`))
			}
			assert.Contains(t, text, fmt.Sprintf("<!date^%d^", at.Unix()))
		})
	}
}

func TestInputModal(t *testing.T) {
	big := strings.Repeat("x", 200_000)
	in, _ := json.Marshal(map[string]string{"file_path": "big.txt", "content": big})
	m := inputModal("job-1", jobapi.PendingAsk{CallID: "w1", Tool: "Write", Summary: "Write big.txt", Input: in})
	assert.LessOrEqual(t, len(m.Blocks.BlockSet), maxModalBlocks)
	assert.LessOrEqual(t, utf8.RuneCountInString(m.Title.Text), 24, "modal titles hold 24 characters")
	js := blocksJSON(t, m.Blocks.BlockSet)
	assert.Contains(t, js, "more characters")
	last := m.Blocks.BlockSet[len(m.Blocks.BlockSet)-1].(*slack.SectionBlock).Text.Text
	assert.True(t, strings.HasSuffix(last, "xxx\nfile_path: big.txt```"), "the input's end is shown: %q", last[max(0, len(last)-40):])
	for _, b := range m.Blocks.BlockSet {
		if s, ok := b.(*slack.SectionBlock); ok {
			assert.LessOrEqual(t, utf8.RuneCountInString(s.Text.Text), 3000)
		}
	}
	small := inputModal("job-1", jobapi.PendingAsk{CallID: "w1", Tool: "Bash", Summary: "Bash ls -la", Input: json.RawMessage(`{"command":"ls -la"}`)})
	assert.Contains(t, blocksJSON(t, small.Blocks.BlockSet), "```command: ls -la```")
}

// hostile is a command that hides what it does from a person reading it
// raw: an erase of the line and a carriage return, an OSC 8 hyperlink, a
// right-to-left override and a zero-width joiner.
const hostile = "echo safe\x1b[2K\rrm -rf ~; printf '\x1b]8;;http://evil.example\x07click\x1b]8;;\x07'; echo \u202eabc; echo a\u200db"

// hostileShown is how package display shows it on one line.
const hostileShown = "echo safe⟨ESC⟩[2K⟨CR⟩rm -rf ~; printf '⟨ESC⟩]8;;http://evil.example⟨BEL⟩click⟨ESC⟩]8;;⟨BEL⟩'; echo ⟨U+202E⟩abc; echo a⟨U+200D⟩b"

// What a person sees in Slack is what runs: the message, its fallback text
// and the View input modal show escape sequences and invisible characters
// escaped, whether the summary came rendered (as the workflow sends it) or
// raw (from an older worker), and the call ID the model chose too.
func TestSlackShowsCommandsEscaped(t *testing.T) {
	s := fakeSlack(t)
	n := testNotifier(s)
	in, _ := json.Marshal(map[string]string{"command": hostile})
	for i, summary := range []string{"Bash: " + hostileShown, "Bash: " + hostile} {
		p := notify.Pending{JobID: "job-esc", CallID: fmt.Sprintf("c\x1b[31m%d", i), Tool: "Bash", Summary: summary, Input: in,
			Reason: "asks: " + hostile, Preview: "Command:\n  " + hostileShown + "\nCommands:\n  echo ⟨U+202E⟩abc",
			AskedAt: deadline.Add(-time.Minute), Deadline: deadline}
		_, err := n.Pending(context.Background(), p)
		require.NoError(t, err)
	}
	msgs := s.Messages()
	require.Len(t, msgs, 2)
	for _, m := range msgs {
		var blocks []any
		require.NoError(t, json.Unmarshal(m.Blocks, &blocks))
		var texts []string
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for _, x := range v {
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			case string:
				texts = append(texts, v)
			}
		}
		walk(blocks)
		all := m.Text + "\n" + strings.Join(texts, "\n")
		assert.Contains(t, all, "`Bash: "+strings.ReplaceAll(hostileShown, "`", "`\u200b")+"`")
		assert.Contains(t, all, "asks: "+hostileShown)
		assert.Contains(t, all, "```Command:\n  "+hostileShown+"\nCommands:\n  echo ⟨U+202E⟩abc```")
		assert.Contains(t, all, "`c⟨ESC⟩[31m")
		var value ButtonValue
		require.NoError(t, json.Unmarshal([]byte(blocks[3].(map[string]any)["elements"].([]any)[0].(map[string]any)["value"].(string)), &value))
		assert.True(t, strings.HasPrefix(value.Call, "c\x1b[31m"), "the buttons carry the call as the job knows it: %q", value.Call)
		shown := strings.ReplaceAll(all, value.Call, "")
		for _, raw := range []string{"\x1b", "\r", "\x07", "\u202e", "\u200d"} {
			assert.NotContains(t, shown, raw, "Slack got %q raw", raw)
		}
	}
	m := inputModal("job-esc", jobapi.PendingAsk{CallID: "c1", Tool: "Bash", Summary: "Bash: " + hostile, Input: in})
	js := blocksJSON(t, m.Blocks.BlockSet)
	assert.Contains(t, js, strings.Trim(mustJSON("```command: "+hostileShown+"```"), `"`), "View input shows the whole input, escaped")
	for _, raw := range []string{"\x1b", "\r", "\x07", "\u202e", "\u200d"} {
		assert.NotContains(t, js, strings.Trim(mustJSON(raw), `"`), "the modal holds %q raw", raw)
	}
}

// A notice says what the job waits for and how to make it try now, with
// whatever the endpoint sent escaped.
func TestNoticeText(t *testing.T) {
	got := noticeText(notify.Notice{JobID: "job-1", Kind: "model-wait",
		Text:  "the endpoint refuses the key: set OPENAI_API_KEY on host vm's worker",
		Error: "401 <@channel> `bad` key", Retry: "retry"})
	assert.Equal(t, ":warning: *custos* job `job-1`: the endpoint refuses the key: set OPENAI_API_KEY on host vm's worker\n"+
		"last error: `401 &lt;@channel&gt; `\u200bbad`\u200b key`\nto try now: `starter retry job-1`", got)
}

// A subagent's waiting call names its parent and the parent's Task call,
// in the message and its fallback text, before and after it is decided.
func TestPendingMessageNamesTheParent(t *testing.T) {
	p := pending()
	p.JobID = "job-1-task-t0"
	p.Parent = &notify.Parent{Job: "job-1", CallID: "t0", Description: "review <api>", Subagent: "reviewer"}
	text, blocks := pendingMessage(p)
	js := blocksJSON(t, blocks)
	assert.Contains(t, text, "job job-1-task-t0 (a subagent of job job-1) asks to run")
	for _, want := range []string{"`job-1-task-t0`", "a subagent of job `job-1` (its Task call `t0`, as `reviewer`: review &lt;api&gt;)"} {
		assert.Contains(t, js, strings.Trim(mustJSON(want), `"`))
	}
	text, blocks = decidedMessage(notify.Decided{JobID: p.JobID, CallID: p.CallID, Tool: "Write", Summary: "Write notes.md",
		Decision: "allow", Answer: "allow", By: "alice", At: deadline, Parent: p.Parent})
	assert.Contains(t, text, "in job job-1-task-t0 (a subagent of job job-1)")
	assert.Contains(t, blocksJSON(t, blocks), "a subagent of job `job-1`")
	_, blocks = pendingMessage(pending())
	assert.NotContains(t, blocksJSON(t, blocks), "subagent", "a job of its own names no parent")
}
