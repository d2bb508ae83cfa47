package activities

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/transcript"
)

// resumed reads what an ended job left in its files, for the run that
// continues it under the same name: nil when it left no transcript (the
// job starts afresh). A damaged transcript is an error: the conversation
// cannot be rebuilt, and a silent fresh start would lose it.
func resumed(files api.JobFiles) (*api.Resumed, error) {
	if _, err := os.Stat(files.Transcript); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	msgs, err := transcript.LoadUpTo(api.Conversation{Files: files}, int(^uint(0)>>1))
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	auditSeq, err := transcript.LastSeq(files.Audit)
	if err != nil {
		return nil, fmt.Errorf("read the audit of the ended job: %w", err)
	}
	r := &api.Resumed{Messages: len(msgs), Tokens: api.EstimateTokens(msgs...), AuditSeq: auditSeq,
		Unanswered: unanswered(msgs)}
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == openai.ChatMessageRoleAssistant && len(m.ToolCalls) == 0 {
			r.LastAnswer = m.Content
			break
		}
	}
	return r, nil
}

// JobFacts is what a job's files hold (message count, last answer, the
// audit's last sequence number), read on the host without the server: for
// `starter status` once the server has forgotten the job. nil when the job
// left no transcript.
func JobFacts(files api.JobFiles) (*api.Resumed, error) {
	return resumed(files)
}

// unanswered are the tool calls of the conversation's last assistant
// message that no tool result follows.
func unanswered(msgs []openai.ChatCompletionMessage) []openai.ToolCall {
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == openai.ChatMessageRoleAssistant {
			last = i
			break
		}
	}
	if last < 0 {
		return nil
	}
	answered := map[string]bool{}
	for _, m := range msgs[last+1:] {
		if m.Role == openai.ChatMessageRoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var out []openai.ToolCall
	for _, tc := range msgs[last].ToolCalls {
		if !answered[tc.ID] {
			out = append(out, tc)
		}
	}
	return out
}
