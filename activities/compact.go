package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
)

// CompactActivity summarises the older part of a job's conversation.
const CompactActivity = "Compact"

// CompactRequest asks for a compaction of the conversation.
type CompactRequest struct {
	Conversation Conversation `json:"conversation"`
	// Window is the model's context window in tokens; KeepTokens how much
	// of it the most recent turns may keep verbatim.
	Window     int    `json:"window"`
	KeepTokens int    `json:"keepTokens"`
	Model      string `json:"model,omitempty"`
}

// CompactResult is the new view of the conversation. The summary is the
// transcript message SummarySeq (the conversation now has SummarySeq
// messages); From is the first message kept verbatim.
type CompactResult struct {
	View View `json:"view"`
	// Message is the summary as stored in the transcript.
	Message   openai.ChatCompletionMessage `json:"message"`
	Summary   string                       `json:"summary"`
	Compacted int                          `json:"compacted"` // messages summarised this time
	// Before and After estimate the prompt in tokens.
	Before int `json:"before"`
	After  int `json:"after"`
}

// CompactedNothingType is a compaction that could not shorten the prompt: the
// most recent turn alone is over what may be kept.
const CompactedNothingType = "NothingToCompact"

const compactionHeader = "[custos compaction: messages %d-%d summarised; the conversation goes on from message %d]\n"

// EstimateTokens estimates the prompt tokens of messages the way
// OpenAI-compatible servers roughly count them: about four bytes a token of
// the messages as sent.
func EstimateTokens(msgs ...openai.ChatCompletionMessage) int {
	b, _ := json.Marshal(msgs)
	return len(b)/4 + 1
}

// Compact summarises the messages between the task and the most recent
// turns with a model call without tools, stores the summary in the
// transcript (so the full conversation stays there, compaction included)
// and returns the view that starts from it. Tool calls and their results
// are never split: the kept part starts at an assistant message. A retry
// finds the summary it stored and returns it unchanged.
func (m *Model) Compact(ctx context.Context, req CompactRequest) (CompactResult, error) {
	c := req.Conversation
	// One read: the conversation, and the summary a previous attempt may
	// have stored after it.
	all, err := c.loadUpTo(c.Total + 1)
	if err != nil {
		return CompactResult{}, err
	}
	msgs := all[:c.Total]
	before := EstimateTokens(c.View.visible(msgs)...)
	summarySeq := c.Total + 1
	if stored, ok := storedSummary(all, c.Total); ok {
		return stored.result(before, msgs), nil
	}
	// The cut: walk back over whole turns while they fit what may be kept.
	cut, kept := len(msgs), 0
	for i := len(msgs) - 1; i >= 2; i-- {
		if msgs[i].Role != openai.ChatMessageRoleAssistant {
			continue
		}
		t := EstimateTokens(msgs[i:cut]...)
		if kept+t > req.KeepTokens && cut < len(msgs) {
			break
		}
		kept += t
		cut = i
	}
	start := max(c.View.From, 3) - 1 // first message not yet summarised (0-based)
	if cut <= start {
		return CompactResult{}, nothingToCompact(fmt.Sprintf("the most recent turn alone (about %d tokens) is over the %d tokens it may keep", kept, req.KeepTokens))
	}
	prev := ""
	if c.View.SummarySeq > 0 {
		_, body, _ := strings.Cut(msgs[c.View.SummarySeq-1].Content, "\n")
		prev = strings.TrimSpace(body)
	}
	summary, err := m.summarise(ctx, req, msgs[1].Content, prev, msgs[start:cut])
	if err != nil {
		return CompactResult{}, err
	}
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Name: CompactionName,
		Content: fmt.Sprintf(compactionHeader, 3, cut, cut+1) + summary}
	store := Conversation{Workspace: c.Workspace, JobID: c.JobID, FirstSeq: summarySeq, Append: []openai.ChatCompletionMessage{msg}}
	if err := store.appendMessages(); err != nil {
		return CompactResult{}, err
	}
	res := compaction{seq: summarySeq, from: cut + 1, summary: summary, msg: msg}
	r := res.result(before, append(msgs, msg))
	r.Compacted = cut - start
	return r, nil
}

type compaction struct {
	seq, from int
	summary   string
	msg       openai.ChatCompletionMessage
}

func (c compaction) result(before int, msgs []openai.ChatCompletionMessage) CompactResult {
	v := View{SummarySeq: c.seq, From: c.from}
	if len(msgs) < c.seq {
		msgs = append(msgs, c.msg)
	}
	return CompactResult{View: v, Message: c.msg, Summary: c.summary, Before: before, After: EstimateTokens(v.visible(msgs)...)}
}

// storedSummary finds a summary a previous attempt stored after the
// conversation's total messages.
func storedSummary(all []openai.ChatCompletionMessage, total int) (compaction, bool) {
	if len(all) <= total {
		return compaction{}, false
	}
	m := all[total]
	if m.Name != CompactionName {
		return compaction{}, false
	}
	var a, b, from int
	head, body, _ := strings.Cut(m.Content, "\n")
	if _, err := fmt.Sscanf(head+"\n", compactionHeader, &a, &b, &from); err != nil {
		return compaction{}, false
	}
	return compaction{seq: total + 1, from: from, summary: body, msg: m}, true
}

// summarise asks the model for a summary of msgs, in pieces that fit the
// window when they are many: each piece's summary feeds the next.
func (m *Model) summarise(ctx context.Context, req CompactRequest, task, prev string, msgs []openai.ChatCompletionMessage) (string, error) {
	budget := max(req.Window*6/10, 1000) * 4 // bytes of rendered conversation a request may carry
	summary := prev
	for len(msgs) > 0 {
		var b strings.Builder
		n := 0
		for n < len(msgs) {
			if msgs[n].Name == CompactionName {
				n++ // an earlier summary: it reached this one as prev
				continue
			}
			line := renderForSummary(msgs[n], budget/4)
			if b.Len() > 0 && b.Len()+len(line) > budget {
				break
			}
			b.WriteString(line)
			n++
		}
		msgs = msgs[n:]
		s, err := m.summaryCall(ctx, req, task, summary, b.String())
		if err != nil {
			return "", err
		}
		summary = s
	}
	return summary, nil
}

func (m *Model) summaryCall(ctx context.Context, req CompactRequest, task, prev, conversation string) (string, error) {
	name := cmp.Or(req.Model, m.Model)
	words := max(req.Window/10*3/4, 100)
	var user strings.Builder
	fmt.Fprintf(&user, "The task:\n%s\n\n", task)
	if prev != "" {
		fmt.Fprintf(&user, "The summary of the work before this part:\n%s\n\n", prev)
	}
	fmt.Fprintf(&user, "The conversation to add to the summary:\n%s", conversation)
	creq := openai.ChatCompletionRequest{Model: name, Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: fmt.Sprintf(`You compact the conversation of a coding agent so it can go on within its context window. Write one summary, at most %d words, of everything that matters to finish the task: what was asked, what was done and decided (including calls that were denied and why), which files were changed and how, what was learned about the code, and the open problems and next steps. Keep exact file paths, names, commands and error messages. Do not invent anything.`, words)},
		{Role: openai.ChatMessageRoleUser, Content: user.String()},
	}}
	stop := heartbeatEvery(ctx, 5*time.Second, func() any { return "summarising" })
	resp, err := m.Client.CreateChatCompletion(ctx, creq)
	stop()
	if err != nil {
		return "", classifyModelError(name, err)
	}
	if len(resp.Choices) == 0 || strings.TrimSpace(resp.Choices[0].Message.Content) == "" {
		return "", fmt.Errorf("model %s: empty summary", name)
	}
	return strings.TrimSpace(resp.Choices[0].Message.Content), nil
}

// renderForSummary is one message as the summariser reads it, long tool
// outputs cut to max bytes.
func renderForSummary(msg openai.ChatCompletionMessage, max int) string {
	var b strings.Builder
	switch msg.Role {
	case openai.ChatMessageRoleTool:
		fmt.Fprintf(&b, "[result of %s %s]\n", msg.Name, msg.ToolCallID)
	default:
		fmt.Fprintf(&b, "[%s]\n", msg.Role)
	}
	content := msg.Content
	if len(content) > max {
		content = content[:max] + fmt.Sprintf("\n… (%d more bytes)", len(msg.Content)-max)
	}
	if content != "" {
		b.WriteString(content)
		b.WriteString("\n")
	}
	for _, tc := range msg.ToolCalls {
		fmt.Fprintf(&b, "calls %s %s\n", tc.Function.Name, tc.Function.Arguments)
	}
	return b.String()
}

func nothingToCompact(msg string) error {
	return temporal.NewNonRetryableApplicationError(msg, CompactedNothingType, nil)
}

// contextWindows are the context windows of well-known models, by name
// prefix (longest first wins).
var contextWindows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4.1", 1047576}, {"gpt-4o", 128000}, {"gpt-4-turbo", 128000}, {"gpt-4", 8192}, {"gpt-3.5-turbo", 16385},
	{"gpt-5", 400000}, {"o1", 200000}, {"o3", 200000}, {"o4-mini", 200000},
	{"claude", 200000}, {"gemini", 1048576}, {"llama3.1", 128000}, {"llama-3.1", 128000}, {"llama3", 8192},
	{"qwen2.5", 32768}, {"mistral", 32768}, {"deepseek", 128000},
}

// DefaultContextWindow is the window of a model the table does not know.
const DefaultContextWindow = 128000

// ContextWindowFor is the context window of a model, from the table of
// well-known names, else DefaultContextWindow.
func ContextWindowFor(model string) int {
	best, tokens := 0, DefaultContextWindow
	m := strings.ToLower(model)
	for _, w := range contextWindows {
		if strings.HasPrefix(m, w.prefix) && len(w.prefix) > best {
			best, tokens = len(w.prefix), w.tokens
		}
	}
	return tokens
}
