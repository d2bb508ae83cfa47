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
)

// The conversation of a job lives in its transcript,
// .custos/sessions/<job>.jsonl in the workspace, one message per line with
// its sequence number (seq 1 is the system prompt, seq 2 the task). The
// workflow keeps only what the file may not hold yet and sends that with
// each model call, which appends it (idempotently, by seq) before reading
// the conversation back. History then grows by what is new each turn, not by
// the whole conversation. The file is fsynced on every append and a torn
// last line is cut off, so a kill -9 of any worker loses nothing the
// workflow has not got again in its history.

// TranscriptErrorType is the error of a transcript that does not hold the
// conversation the job expects (a file deleted or edited by hand): the job
// cannot rebuild the conversation, so retrying does not help.
const TranscriptErrorType = "TranscriptError"

// Conversation names a job's stored conversation and what the model sees.
type Conversation struct {
	Workspace string `json:"workspace"`
	JobID     string `json:"jobId"`
	// Append are messages that may not be in the transcript yet: message
	// i has seq FirstSeq+i. Those already there are skipped.
	FirstSeq int                            `json:"firstSeq,omitempty"`
	Append   []openai.ChatCompletionMessage `json:"append,omitempty"`
	// Total is how many messages the conversation has (the last seq).
	Total int `json:"total"`
	// View is the part of the conversation the model sees.
	View View `json:"view"`
}

// View is what the model is sent after compaction: the system prompt and the
// task (seqs 1 and 2), the summary message (SummarySeq, 0 for none), then
// every message from seq From (0: from seq 3) on, other summaries left out.
type View struct {
	SummarySeq int `json:"summarySeq,omitempty"`
	From       int `json:"from,omitempty"`
}

// CompactionName marks a summary message in the transcript.
const CompactionName = "compaction"

// appendMessages stores the messages the workflow sent, idempotently.
func (c Conversation) appendMessages() error {
	if len(c.Append) == 0 {
		return nil
	}
	lines := make([]seqLine, len(c.Append))
	for i, m := range c.Append {
		seq := c.FirstSeq + i
		lines[i] = seqLine{seq: seq, v: transcriptLine{Seq: seq, Msg: m}}
	}
	if err := appendSeq(SessionFile(c.Workspace, c.JobID), lines); err != nil {
		return fmt.Errorf("append to the transcript: %w", err)
	}
	return nil
}

// load appends what is new and reads the whole conversation back, checking
// that the file holds exactly seqs 1..Total.
func (c Conversation) load() ([]openai.ChatCompletionMessage, error) {
	return c.loadUpTo(c.Total)
}

// loadUpTo is load reading up to limit (>= Total) messages: those past
// Total are there when a previous attempt stored them.
func (c Conversation) loadUpTo(limit int) ([]openai.ChatCompletionMessage, error) {
	if err := c.appendMessages(); err != nil {
		return nil, err
	}
	path := SessionFile(c.Workspace, c.JobID)
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

// VisibleCount is how many of a transcript's total messages visible sends:
// all of them until a compaction, then the system prompt, the task, the
// summary and the messages kept verbatim (earlier summaries lie before From).
func (v View) VisibleCount(total int) int {
	if v.SummarySeq == 0 && v.From <= 3 {
		return total
	}
	from := max(v.From, 3)
	n := min(2, total) + max(total-from+1, 0)
	if v.SummarySeq > 0 && v.SummarySeq <= total && v.SummarySeq < from {
		n++ // the summary, placed after the task (within the kept part it is counted already)
	}
	return n
}

// visible is the part of msgs the model sees under the view.
func (v View) visible(msgs []openai.ChatCompletionMessage) []openai.ChatCompletionMessage {
	if v.SummarySeq == 0 && v.From <= 3 {
		return msgs
	}
	out := append([]openai.ChatCompletionMessage(nil), msgs[:min(2, len(msgs))]...)
	if v.SummarySeq > 0 && v.SummarySeq <= len(msgs) {
		out = append(out, msgs[v.SummarySeq-1])
	}
	for i := max(v.From, 3) - 1; i < len(msgs); i++ {
		if msgs[i].Name == CompactionName && msgs[i].Role == openai.ChatMessageRoleUser {
			continue
		}
		out = append(out, msgs[i])
	}
	return out
}

func transcriptError(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return temporal.NewNonRetryableApplicationError(msg, TranscriptErrorType, nil)
}
