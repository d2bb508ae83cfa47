package activities

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/internal/atomicfile"
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

// CutTranscript cuts a job's transcript after message req.After and the
// tool results that follow it: the conversation as it stood at the end of
// that turn. The file is replaced whole (a new file, synced, renamed
// over), so a kill leaves the old conversation or the cut one.
func CutTranscript(ctx context.Context, req api.CutRequest) (api.CutResult, error) {
	c := req.Conversation
	msgs, err := loadConversation(c)
	if err != nil {
		return api.CutResult{}, err
	}
	path := c.Files.Or(c.Workspace, c.JobID).Transcript
	return cutInto(msgs, req.After, path)
}

// CopyTranscriptCut writes to dst the transcript src cut after message
// after and the tool results that follow it (a fork's conversation).
func CopyTranscriptCut(src, dst string, after int) (api.CutResult, error) {
	msgs, err := loadUpTo(api.Conversation{Files: api.JobFiles{Transcript: src, Audit: src}}, int(^uint(0)>>1))
	if err != nil {
		return api.CutResult{}, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return api.CutResult{}, fmt.Errorf("fork the transcript: %w", err)
	}
	return cutInto(msgs, after, dst)
}

// cutInto writes msgs, cut after message after and the tool results that
// follow it, to the transcript path, whole.
func cutInto(msgs []openai.ChatCompletionMessage, after int, path string) (api.CutResult, error) {
	if after < 1 || after > len(msgs) {
		return api.CutResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("cut after message %d: the conversation has %d", after, len(msgs)), "BadCut", nil)
	}
	n := after
	for n < len(msgs) && msgs[n].Role == openai.ChatMessageRoleTool {
		n++
	}
	var buf bytes.Buffer
	for i, m := range msgs[:n] {
		b, err := json.Marshal(transcriptLine{Seq: i + 1, Msg: m})
		if err != nil {
			return api.CutResult{}, fmt.Errorf("cut the transcript: line %d: %w", i+1, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := atomicfile.Write(path, buf.Bytes(), 0o600); err != nil {
		return api.CutResult{}, toolkit.ClassifyDiskFull(fmt.Errorf("cut the transcript: %w", err))
	}
	return api.CutResult{Total: n, Last: msgs[n-1]}, nil
}
