package model

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/activities/transcript"
)

const compactionHeader = "[custos compaction: messages %d-%d summarised; the conversation goes on from message %d]\n"

// Compact summarises the messages between the task and the most recent
// turns with a model call without tools, stores the summary in the
// transcript (so the full conversation stays there, compaction included)
// and returns the view that starts from it. Tool calls and their results
// are never split: the kept part starts at an assistant message. A retry
// finds the summary it stored and returns it unchanged.
func (m *Model) Compact(ctx context.Context, req api.CompactRequest) (api.CompactResult, error) {
	c := req.Conversation
	// One read: the conversation, and the summary a previous attempt may
	// have stored after it.
	all, err := transcript.LoadUpTo(c, c.Total+1)
	if err != nil {
		return api.CompactResult{}, err
	}
	msgs := all[:c.Total]
	before := api.EstimateTokens(c.View.Visible(msgs)...)
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
		t := api.EstimateTokens(msgs[i:cut]...)
		if kept+t > req.KeepTokens && cut < len(msgs) {
			break
		}
		kept += t
		cut = i
	}
	start := max(c.View.From, 3) - 1 // first message not yet summarised (0-based)
	if cut <= start {
		return api.CompactResult{}, nothingToCompact(fmt.Sprintf("the most recent turn alone (about %d tokens) is over the %d tokens it may keep", kept, req.KeepTokens))
	}
	prev := ""
	if c.View.SummarySeq > 0 {
		_, body, _ := strings.Cut(msgs[c.View.SummarySeq-1].Content, "\n")
		prev = strings.TrimSpace(body)
	}
	summary, err := m.summarise(ctx, req, msgs[1].Content, prev, msgs[start:cut])
	if err != nil {
		return api.CompactResult{}, err
	}
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Name: api.CompactionName,
		Content: fmt.Sprintf(compactionHeader, 3, cut, cut+1) + summary}
	store := api.Conversation{Workspace: c.Workspace, JobID: c.JobID, Files: c.Files, FirstSeq: summarySeq, Append: []openai.ChatCompletionMessage{msg}}
	if err := transcript.Append(store); err != nil {
		return api.CompactResult{}, err
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

func (c compaction) result(before int, msgs []openai.ChatCompletionMessage) api.CompactResult {
	v := api.View{SummarySeq: c.seq, From: c.from}
	if len(msgs) < c.seq {
		msgs = append(msgs, c.msg)
	}
	return api.CompactResult{View: v, Message: c.msg, Summary: c.summary, Before: before, After: api.EstimateTokens(v.Visible(msgs)...)}
}

// storedSummary finds a summary a previous attempt stored after the
// conversation's total messages.
func storedSummary(all []openai.ChatCompletionMessage, total int) (compaction, bool) {
	if len(all) <= total {
		return compaction{}, false
	}
	m := all[total]
	if m.Name != api.CompactionName {
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
func (m *Model) summarise(ctx context.Context, req api.CompactRequest, task, prev string, msgs []openai.ChatCompletionMessage) (string, error) {
	budget := max(req.Window*6/10, 1000) * 4 // bytes of rendered conversation a request may carry
	summary := prev
	for len(msgs) > 0 {
		var b strings.Builder
		n := 0
		for n < len(msgs) {
			if msgs[n].Name == api.CompactionName {
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

func (m *Model) summaryCall(ctx context.Context, req api.CompactRequest, task, prev, conversation string) (string, error) {
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
	stop := toolkit.HeartbeatEvery(ctx, 5*time.Second, func() any { return "summarising" })
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
	return temporal.NewNonRetryableApplicationError(msg, api.CompactedNothingType, nil)
}
