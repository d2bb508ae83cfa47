package slack

import (
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
	"github.com/custos-dev/custos/workflows"
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
	// The count names exactly what was left out.
	shown := strings.TrimPrefix(got[:strings.LastIndex(got, "```")], "*What it would do*\n```")
	require.True(t, strings.HasPrefix(p.Preview, shown))
	rest := p.Preview[len(shown):]
	assert.Contains(t, got, fmt.Sprintf("_… %d more characters (%d lines) not shown_", utf8.RuneCountInString(rest), strings.Count(rest, "\n")+1))

	// A short preview is shown whole, with no count.
	_, blocks = pendingMessage(pending())
	assert.NotContains(t, blocks[2].(*slack.SectionBlock).Text.Text, "not shown")
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
	m := inputModal("job-1", workflows.PendingAsk{CallID: "w1", Tool: "Write", Summary: "Write big.txt", Input: in})
	assert.LessOrEqual(t, len(m.Blocks.BlockSet), maxModalBlocks)
	assert.LessOrEqual(t, utf8.RuneCountInString(m.Title.Text), 24, "modal titles hold 24 characters")
	js := blocksJSON(t, m.Blocks.BlockSet)
	assert.Contains(t, js, "more characters")
	for _, b := range m.Blocks.BlockSet {
		if s, ok := b.(*slack.SectionBlock); ok {
			assert.LessOrEqual(t, utf8.RuneCountInString(s.Text.Text), 3000)
		}
	}
	small := inputModal("job-1", workflows.PendingAsk{CallID: "w1", Tool: "Bash", Summary: "Bash ls -la", Input: json.RawMessage(`{"command":"ls -la"}`)})
	assert.Contains(t, blocksJSON(t, small.Blocks.BlockSet), `\"command\": \"ls -la\"`)
}
