package activities

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
)

// The conversation of a job lives in its transcript (api.JobFiles: in
// custos' state directory, sessions/<job>.jsonl), one message per line with
// its sequence number (seq 1 is the system prompt, seq 2 the task). The
// workflow keeps only what the file may not hold yet and sends that with
// each model call, which appends it (idempotently, by seq) before reading
// the conversation back. History then grows by what is new each turn, not by
// the whole conversation. The file is fsynced on every append and a torn
// last line is cut off, so a kill -9 of any worker loses nothing the
// workflow has not got again in its history.

// appendMessages stores the messages the workflow sent, idempotently.
func appendMessages(c api.Conversation) error {
	if len(c.Append) == 0 {
		return nil
	}
	lines := make([]seqLine, len(c.Append))
	for i, m := range c.Append {
		seq := c.FirstSeq + i
		lines[i] = seqLine{seq: seq, v: transcriptLine{Seq: seq, Msg: m}}
	}
	if err := appendSeq(c.Files.Or(c.Workspace, c.JobID).Transcript, lines); err != nil {
		return fmt.Errorf("append to the transcript: %w", err)
	}
	return nil
}

// loadConversation appends what is new and reads the whole conversation
// back, checking that the file holds exactly seqs 1..Total.
func loadConversation(c api.Conversation) ([]openai.ChatCompletionMessage, error) {
	return loadUpTo(c, c.Total)
}

// loadUpTo is loadConversation reading up to limit (>= Total) messages:
// those past Total are there when a previous attempt stored them.
func loadUpTo(c api.Conversation, limit int) ([]openai.ChatCompletionMessage, error) {
	if err := appendMessages(c); err != nil {
		return nil, err
	}
	path := c.Files.Or(c.Workspace, c.JobID).Transcript
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, transcriptError("transcript %s is missing; the job cannot rebuild its conversation", path)
	}
	if err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	defer f.Close()
	msgs := make([]openai.ChatCompletionMessage, 0, c.Total)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for len(msgs) < limit && sc.Scan() {
		// Two decodes: the message's own UnmarshalJSON would hide seq.
		var l struct {
			Seq int `json:"seq"`
		}
		var m openai.ChatCompletionMessage
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, transcriptError("transcript %s line %d: %v", path, len(msgs)+1, err)
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, transcriptError("transcript %s line %d: %v", path, len(msgs)+1, err)
		}
		if l.Seq != len(msgs)+1 {
			return nil, transcriptError("transcript %s: line %d has seq %d, want %d (edited or damaged)", path, len(msgs)+1, l.Seq, len(msgs)+1)
		}
		msgs = append(msgs, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	if len(msgs) < c.Total {
		return nil, transcriptError("transcript %s holds %d messages, the job has %d", path, len(msgs), c.Total)
	}
	return msgs, nil
}

func transcriptError(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return temporal.NewNonRetryableApplicationError(msg, api.TranscriptErrorType, nil)
}
