// Package transcript keeps the conversation of a job in its transcript
// (api.JobFiles: in custos' state directory, sessions/<job>.jsonl), one
// message per line with its sequence number (seq 1 is the system prompt, seq 2 the task). The
// workflow keeps only what the file may not hold yet and sends that with
// each model call, which appends it (idempotently, by seq) before reading
// the conversation back. History then grows by what is new each turn, not by
// the whole conversation. The file is fsynced on every append and a torn
// last line is cut off, so a kill -9 of any worker loses nothing the
// workflow has not got again in its history.
package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
)

// Append stores the messages the workflow sent, idempotently.
func Append(c api.Conversation) error {
	if len(c.Append) == 0 {
		return nil
	}
	lines := make([]SeqLine, len(c.Append))
	for i, m := range c.Append {
		seq := c.FirstSeq + i
		lines[i] = SeqLine{Seq: seq, V: Line{Seq: seq, Msg: m}}
	}
	if err := AppendSeq(c.Files.Or(c.Workspace, c.JobID).Transcript, lines); err != nil {
		return fmt.Errorf("append to the transcript: %w", err)
	}
	return nil
}

// Load appends what is new and reads the whole conversation
// back, checking that the file holds exactly seqs 1..Total.
func Load(c api.Conversation) ([]openai.ChatCompletionMessage, error) {
	return LoadUpTo(c, c.Total)
}

// LoadUpTo is Load reading up to limit (>= Total) messages:
// those past Total are there when a previous attempt stored them.
func LoadUpTo(c api.Conversation, limit int) ([]openai.ChatCompletionMessage, error) {
	if err := Append(c); err != nil {
		return nil, err
	}
	path := c.Files.Or(c.Workspace, c.JobID).Transcript
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Errorf("transcript %s is missing; the job cannot rebuild its conversation", path)
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
			return nil, Errorf("transcript %s line %d: %v", path, len(msgs)+1, err)
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, Errorf("transcript %s line %d: %v", path, len(msgs)+1, err)
		}
		if l.Seq != len(msgs)+1 {
			return nil, Errorf("transcript %s: line %d has seq %d, want %d (edited or damaged)", path, len(msgs)+1, l.Seq, len(msgs)+1)
		}
		msgs = append(msgs, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	if len(msgs) < c.Total {
		return nil, Errorf("transcript %s holds %d messages, the job has %d", path, len(msgs), c.Total)
	}
	return msgs, nil
}

func Errorf(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return temporal.NewNonRetryableApplicationError(msg, api.TranscriptErrorType, nil)
}

// Line is one line of a transcript (sessions/<job>.jsonl): the message
// with its sequence number in front. (Embedding the message in a struct would
// not do: its own MarshalJSON is promoted and drops the seq field.)
type Line struct {
	Seq int
	Msg openai.ChatCompletionMessage
}

func (l Line) MarshalJSON() ([]byte, error) {
	msg, err := json.Marshal(l.Msg)
	if err != nil {
		return nil, err
	}
	out := fmt.Appendf(nil, `{"seq":%d`, l.Seq)
	if rest := bytes.TrimPrefix(msg, []byte("{")); len(rest) > 1 { // more than "}"
		out = append(out, ',')
		return append(out, rest...), nil
	}
	return append(out, '}'), nil
}

type SeqLine struct {
	Seq int
	V   any
}

// AppendSeq appends the lines past the file's last seq. The lines are
// encoded first and written in one go; a write that fails (a full disk)
// is cut back off, so the file never keeps a torn line, and a later
// append (LastSeq) starts from a clean end either way.
func AppendSeq(path string, lines []SeqLine) error {
	if len(lines) == 0 {
		return nil
	}
	// Owner-only: a transcript holds everything the model read.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	last, err := LastSeq(path)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, l := range lines {
		if l.Seq <= last {
			continue
		}
		b, err := json.Marshal(l.V)
		if err != nil {
			return fmt.Errorf("encode line %d: %w", l.Seq, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if buf.Len() == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		// Shrinking needs no space: take back what part of the lines
		// landed, so nobody reads half a record.
		if terr := f.Truncate(fi.Size()); terr != nil {
			err = fmt.Errorf("%w (and cutting the partial line failed: %v)", err, terr)
		}
		f.Close()
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return f.Close()
}

// LastSeq returns the sequence number of the file's last complete line. A torn
// last line (a crash mid-write) is cut off so the next append starts clean.
// It reads the file backwards from its end, only as far as that line starts:
// a save costs the same on turn 300 as on turn 1.
func LastSeq(path string) (int, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	off, buf := fi.Size(), []byte(nil) // buf holds the file from off to the end
	for {
		end := bytes.LastIndexByte(buf, '\n')
		if end >= 0 && end != len(buf)-1 {
			// Torn last line: cut it off.
			if err := f.Truncate(off + int64(end) + 1); err != nil {
				return 0, fmt.Errorf("repair torn line: %w", err)
			}
			buf = buf[:end+1]
		}
		if end >= 0 {
			if start := bytes.LastIndexByte(buf[:end], '\n'); start >= 0 || off == 0 {
				var l struct {
					Seq int `json:"seq"`
				}
				if err := json.Unmarshal(buf[start+1:end], &l); err != nil {
					return 0, fmt.Errorf("read last line of %s: %w", path, err)
				}
				return l.Seq, nil
			}
		}
		if off == 0 {
			// No complete line at all: whatever is there is torn.
			if len(buf) > 0 {
				if err := f.Truncate(0); err != nil {
					return 0, fmt.Errorf("repair torn line: %w", err)
				}
			}
			return 0, nil
		}
		n := min(int64(64<<10), off)
		off -= n
		chunk := make([]byte, n)
		if _, err := f.ReadAt(chunk, off); err != nil {
			return 0, fmt.Errorf("read %s: %w", path, err)
		}
		buf = append(chunk, buf...)
	}
}
