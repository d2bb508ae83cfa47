package slack

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Action IDs of the message's buttons and the block that holds them.
const (
	ActionAllow  = "custos_allow"
	ActionDeny   = "custos_deny"
	ActionAlways = "custos_always"
	ActionNever  = "custos_never"
	ActionView   = "custos_view"
	// ActionGrant allows the call and grants its rule in the job for
	// GrantFor (a button beside the text that names the rule).
	ActionGrant  = "custos_grant"
	actionsBlock = "custos_decide"

	// MetadataEventType marks custos' messages; the payload names the job
	// and call, so a retried post can find the message it already sent.
	MetadataEventType = "custos_approval"
)

// Block Kit limits (https://docs.slack.dev/reference/block-kit/blocks):
// a section's text holds 3000 characters, a field 2000, a button's value
// 2000, a modal 100 blocks. We stay under them with a margin, because Slack
// counts characters its own way.
const (
	maxSectionText = 2900
	maxFieldText   = 1900
	maxSummary     = 500
	maxModalBlocks = 40
)

// decisionOf maps a button to the decide Update's decision.
var decisionOf = map[string]string{
	ActionAllow: "allow", ActionDeny: "deny", ActionAlways: "always", ActionNever: "never",
}

// GrantFor is how long the Allow-for button's grant lasts.
const GrantFor = "30m"

// ButtonValue is what each button carries: the job and the call.
type ButtonValue struct {
	Job  string `json:"job"`
	Call string `json:"call"`
}

// pendingMessage renders the approval request: fallback text and blocks.
// What the model wrote is shown through package display (escape sequences
// and invisible characters visible, a long text's head and tail) and then
// escaped for mrkdwn; the summary and preview come rendered from the
// workflow and pass display.Safe, which leaves rendered text as it is.
func pendingMessage(p notify.Pending) (string, []slack.Block) {
	// The buttons carry the call as it is: the job answers to it.
	value, _ := json.Marshal(ButtonValue{Job: p.JobID, Call: p.CallID})
	p = shownPending(p)
	head := headerText(p.JobID, p.Tool, p.Summary) + parentText(p.Parent)
	fields := []*slack.TextBlockObject{
		mrkdwn("*Why it asks*\n" + truncate(cmpOr(display.Line(p.Reason, maxFieldText/2), "no rule decided it"), maxFieldText)),
		mrkdwn("*Denied unless answered by*\n" + slackDate(p.Deadline, "{date_short_pretty} at {time}")),
		mrkdwn("*Mode*\n" + escape(cmpOr(p.Mode, "default"))),
		mrkdwn("*Call*\n`" + code(p.CallID, 200) + "`"),
	}
	blocks := []slack.Block{
		slack.NewSectionBlock(mrkdwn(head), nil, nil),
		slack.NewSectionBlock(nil, fields, nil),
	}
	if p.Preview != "" {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(codeBlock("*What it would do*\n", p.Preview, maxSectionText)), nil, nil))
	}
	button := func(id, label, style string) *slack.ButtonBlockElement {
		b := slack.NewButtonBlockElement(id, string(value), slack.NewTextBlockObject(slack.PlainTextType, label, false, false))
		if style != "" {
			b.Style = slack.Style(style)
		}
		return b
	}
	switch {
	case p.Quorum:
		// The job would refuse Always, Never and a grant: they do not
		// stand in for the approvals the call needs. Only what counts is
		// offered.
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(
			"*Needs several approvals*: each approver's *Allow* counts once; one *Deny* denies. Always, Never and grants do not apply."), nil, nil))
	case p.Rule != "":
		// Its own section, the rule named beside the button: a grant
		// allows more than this call, so the person sees what.
		grant := button(ActionGrant, "Allow "+GrantFor, "")
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(fmt.Sprintf("*Allow %s* also allows `%s` in this job for %s (revoke: `/custos revoke JOB GRANT`)",
			GrantFor, code(display.Line(p.Rule, 400), 400), GrantFor)), nil, slack.NewAccessory(grant)))
	}
	buttons := []slack.BlockElement{button(ActionAllow, "Allow", "primary"), button(ActionDeny, "Deny", "danger")}
	if !p.Quorum {
		buttons = append(buttons, button(ActionAlways, "Always", ""), button(ActionNever, "Never", ""))
	}
	blocks = append(blocks, slack.NewActionBlock(actionsBlock, append(buttons, button(ActionView, "View input", ""))...))
	text := fmt.Sprintf("custos: job %s%s asks to run %s, denied unless answered by %s",
		escape(p.JobID), parentShort(p.Parent), escape(oneLine(cmpOr(p.Summary, p.Tool), maxSummary)), slackDate(p.Deadline, "{date_short_pretty} at {time}"))
	return text, blocks
}

// decidedMessage renders the outcome; the buttons are gone.
func decidedMessage(d notify.Decided) (string, []slack.Block) {
	d.JobID, d.CallID, d.Summary = display.Line(d.JobID, 200), display.Line(d.CallID, 200), display.SafeLine(d.Summary)
	d.By, d.Channel, d.Rule = display.Line(d.By, 200), display.Line(d.Channel, 200), display.Line(d.Rule, 400)
	d.Reason = display.Line(d.Reason, 900)
	outcome := outcomeText(d)
	blocks := []slack.Block{
		slack.NewSectionBlock(mrkdwn(headerText(d.JobID, d.Tool, d.Summary)+parentText(d.Parent)), nil, nil),
		slack.NewSectionBlock(mrkdwn(outcome), nil, nil),
	}
	text := fmt.Sprintf("custos: %s in job %s%s: %s", escape(oneLine(cmpOr(d.Summary, d.Tool), maxSummary)), escape(d.JobID), parentShort(d.Parent), outcome)
	return text, blocks
}

// shownPending is p with what people read of it rendered by package
// display: names and reasons escaped, the summary and preview made safe.
func shownPending(p notify.Pending) notify.Pending {
	p.JobID, p.CallID, p.Mode = display.Line(p.JobID, 200), display.Line(p.CallID, 200), display.Line(p.Mode, 100)
	p.Summary, p.Preview = display.SafeLine(p.Summary), display.Safe(p.Preview)
	return p
}

// outcomeText says what became of the call and who or what decided.
func outcomeText(d notify.Decided) string {
	at := slackDate(d.At, "{date_short_pretty} at {time}")
	var s string
	switch d.Answer {
	case "timeout":
		s = ":hourglass: *Denied by the timer*: nobody answered in time (" + at + ")"
	case "canceled":
		s = ":no_entry: *Denied: the job was canceled* (" + at + ")"
	default:
		verb := ":white_check_mark: *Allowed*"
		if d.Decision != "allow" {
			verb = ":no_entry: *Denied*"
		}
		if d.Answer == "always" || d.Answer == "never" {
			verb += " (" + d.Answer + ")"
		}
		s = fmt.Sprintf("%s by %s (%s)", verb, byText(d.By, d.Channel), at)
	}
	if d.Rule != "" {
		s += "\nRule learned: `" + code(d.Rule, 500) + "`"
	}
	if d.Reason != "" {
		s += "\nReason: " + truncate(d.Reason, 1000)
	}
	return s
}

var slackUser = regexp.MustCompile(`^([UW][A-Z0-9]+)\b`)

// byText names who decided: a Slack user as a mention, anyone else by name,
// with the channel.
func byText(by, channel string) string {
	name := escape(cmpOr(by, "someone"))
	if channel == "slack" {
		if m := slackUser.FindStringSubmatch(by); m != nil {
			name = "<@" + m[1] + ">"
		}
	}
	if channel == "" {
		return name
	}
	return name + " via " + escape(channel)
}

// headerText names the job and the call; the summary already starts with
// the tool's name ("Write notes.md", "Bash go test ./...").
func headerText(job, tool, summary string) string {
	return fmt.Sprintf(":lock: *custos* job `%s` asks to run `%s`", code(job, 200), code(oneLine(cmpOr(summary, tool), maxSummary), maxSummary+100))
}

// parentText is the header's line naming a subagent's parent ("" for a
// job of its own): the call waits in the child, and is answered there.
func parentText(p *notify.Parent) string {
	if p == nil {
		return ""
	}
	what := escape(display.Line(p.Description, 200))
	if p.Subagent != "" {
		what = fmt.Sprintf("as `%s`: %s", code(display.Line(p.Subagent, 100), 100), what)
	}
	return fmt.Sprintf("\n:arrow_up: a subagent of job `%s` (its Task call `%s`, %s)",
		code(display.Line(p.Job, 200), 200), code(display.Line(p.CallID, 200), 200), what)
}

// parentShort names a subagent's parent in a fallback text.
func parentShort(p *notify.Parent) string {
	if p == nil {
		return ""
	}
	return " (a subagent of job " + escape(display.Line(p.Job, 200)) + ")"
}

// slackDate renders t with Slack's date formatting, so each reader sees it
// in their own time zone; the fallback (for clients that cannot) is UTC.
func slackDate(t time.Time, format string) string {
	if t.IsZero() {
		return "unknown"
	}
	return fmt.Sprintf("<!date^%d^%s|%s>", t.Unix(), format, t.UTC().Format("2006-01-02 15:04 UTC"))
}

// inputModal shows the full input of a call, pretty-printed, in as many
// sections as Block Kit allows, truncated with a count beyond that.
func inputModal(job string, p jobapi.PendingAsk) slack.ModalViewRequest {
	blocks := []slack.Block{slack.NewSectionBlock(mrkdwn(headerText(display.Line(job, 200), p.Tool, display.SafeLine(p.Summary))), nil, nil)}
	rest := display.Input(p.Input)
	// Beyond what a modal holds, the head and the tail of the input, with
	// the count of what is left out between them.
	section := func(chunk string) slack.Block { return slack.NewSectionBlock(mrkdwn("```"+chunk+"```"), nil, nil) }
	headBlocks, tailBlocks := (maxModalBlocks-2)*2/3, (maxModalBlocks-2)-(maxModalBlocks-2)*2/3
	for rest != "" && len(blocks) <= headBlocks {
		chunk, n := escapedPrefix(rest, maxSectionText-10)
		rest = rest[n:]
		blocks = append(blocks, section(chunk))
	}
	var tail []slack.Block
	for rest != "" && len(tail) < tailBlocks {
		chunk, start := escapedSuffix(rest, maxSectionText-10)
		rest = rest[:start]
		tail = append([]slack.Block{section(chunk)}, tail...)
	}
	if rest != "" {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(omitted(rest))))
	}
	blocks = append(blocks, tail...)
	return slack.ModalViewRequest{
		Type:   slack.VTModal,
		Title:  slack.NewTextBlockObject(slack.PlainTextType, "Tool call input", false, false),
		Close:  slack.NewTextBlockObject(slack.PlainTextType, "Close", false, false),
		Blocks: slack.Blocks{BlockSet: blocks},
	}
}

// codeBlock is title plus s in a code block, the whole at most max
// characters: a longer s shows its head and its tail, with the count of
// what is left out between them, so its end never disappears.
func codeBlock(title, s string, max int) string {
	budget := max - len(title) - len("``````") - 80 // 80: the count line
	body, n := escapedPrefix(s, budget)
	if n == len(s) {
		return title + "```" + body + "```"
	}
	head, hn := escapedPrefix(s, budget*2/3)
	tail, tn := escapedSuffix(s[hn:], budget-len(head))
	return title + "```" + head + "\n" + leftOut(s[hn:hn+tn]) + "\n" + tail + "```"
}

// leftOut counts what a shortened text leaves out, in package display's
// notation.
func leftOut(rest string) string {
	return fmt.Sprintf("⟨… %d characters (%d lines) left out …⟩", utf8.RuneCountInString(rest), strings.Count(rest, "\n")+1)
}

func omitted(rest string) string {
	return fmt.Sprintf("_… %d more characters (%d lines) not shown_", utf8.RuneCountInString(rest), strings.Count(rest, "\n")+1)
}

// truncate escapes s and cuts it to max characters with a count.
func truncate(s string, max int) string {
	body, n := escapedPrefix(s, max-60)
	if n < len(s) {
		return body + " " + omitted(s[n:])
	}
	return body
}

// escapedPrefix escapes the longest prefix of s whose escaped form fits in
// max bytes, on a rune boundary; n is the prefix's length in s. Backtick
// runs are broken so text cannot close the code block it is shown in.
func escapedPrefix(s string, max int) (string, int) {
	var b strings.Builder
	n := 0
	for n < len(s) {
		r, size := utf8.DecodeRuneInString(s[n:])
		var piece string
		switch r {
		case '&':
			piece = "&amp;"
		case '<':
			piece = "&lt;"
		case '>':
			piece = "&gt;"
		case '`':
			piece = "`\u200b" // zero-width space: "```" in the text never closes the block
		default:
			piece = s[n : n+size]
		}
		if b.Len()+len(piece) > max {
			break
		}
		b.WriteString(piece)
		n += size
	}
	return b.String(), n
}

// escapedSuffix is escapedPrefix from the end: the longest suffix of s
// whose escaped form fits in max bytes, and where in s it starts.
func escapedSuffix(s string, max int) (string, int) {
	var pieces []string
	size, start := 0, len(s)
	for start > 0 {
		_, n := utf8.DecodeLastRuneInString(s[:start])
		piece, _ := escapedPrefix(s[start-n:start], 16)
		if size+len(piece) > max {
			break
		}
		pieces = append(pieces, piece)
		size += len(piece)
		start -= n
	}
	slices.Reverse(pieces)
	return strings.Join(pieces, ""), start
}

// escape is Slack's required escaping of &, < and > in mrkdwn: without it a
// tool input could mention @channel or show a disguised link.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// code escapes s for inline code, on one line, cut to max.
func code(s string, max int) string {
	out, _ := escapedPrefix(oneLine(s, max), max*2)
	return out
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "…"
	}
	return s
}

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func cmpOr(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// maxConversation bounds an answer or a message as the thread shows it,
// in characters: Slack cuts a message's text past 4000.
const maxConversation = 3500

// conversationText is an answer or a message for the thread: what a
// screen would interpret escaped (package display), its lines kept, a long
// one as its head and tail around a count, then escaped for mrkdwn, so
// nothing in it mentions anyone or becomes a link.
func conversationText(s string) string {
	s = display.Block(s, 0, 0)
	if r := []rune(s); len(r) > maxConversation {
		head, tail := maxConversation*2/3, maxConversation/3
		s = string(r[:head]) + "\n" + leftOut(string(r[head:len(r)-tail])) + "\n" + string(r[len(r)-tail:])
	}
	return escape(s)
}

// noticeText is a Notice as one message: the job, what happened, the fix
// and how to make the job try now, every piece escaped; an answer or a
// message as the conversation's text.
func noticeText(nt notify.Notice) string {
	var b strings.Builder
	switch nt.Kind {
	case notify.KindAnswer:
		fmt.Fprintf(&b, ":speech_balloon: *custos* job `%s` answered (reply in this thread to send it the next message):\n%s",
			code(nt.JobID, 200), conversationText(nt.Text))
		return b.String()
	case notify.KindMessage:
		fmt.Fprintf(&b, ":bust_in_silhouette: message to job `%s` from %s:\n%s", code(nt.JobID, 200),
			byText(display.Line(nt.By, 200), display.Line(nt.Channel, 100)), conversationText(nt.Text))
		return b.String()
	}
	fmt.Fprintf(&b, ":warning: *custos* job `%s`: %s", code(nt.JobID, 200), escape(oneLine(nt.Text, 2000)))
	if nt.Error != "" {
		fmt.Fprintf(&b, "\nlast error: `%s`", code(nt.Error, 1000))
	}
	if nt.Retry != "" {
		fmt.Fprintf(&b, "\nto try now: `%s`", code("starter retry "+nt.JobID, 300))
	}
	return b.String()
}

// shortHash names a text in a metadata key.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
