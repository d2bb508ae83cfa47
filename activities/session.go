package activities

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/settingsfile"
)

// transcriptLine is one line of a transcript (sessions/<job>.jsonl): the message
// with its sequence number in front. (Embedding the message in a struct would
// not do: its own MarshalJSON is promoted and drops the seq field.)
type transcriptLine struct {
	Seq int
	Msg openai.ChatCompletionMessage
}

func (l transcriptLine) MarshalJSON() ([]byte, error) {
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

// SaveSession appends new transcript messages and audit records. Every line
// carries a sequence number and only lines past the file's last one are
// written, so a retried save never duplicates anything.
func SaveSession(ctx context.Context, req api.SaveSessionRequest) error {
	if req.Workspace == "" || req.JobID == "" {
		return fmt.Errorf("save session: workspace and job id are required")
	}
	files := req.Files.Or(req.Workspace, req.JobID)
	if req.Files.Transcript == "" {
		// A job from before transcripts left the workspace: they stay
		// where they are, and git is told to leave them alone.
		_ = settingsfile.IgnoreLocal(req.Workspace)
	}
	lines := make([]seqLine, 0, len(req.Messages))
	for i, m := range req.Messages {
		lines = append(lines, seqLine{seq: req.FirstMessage + i + 1, v: transcriptLine{Seq: req.FirstMessage + i + 1, Msg: m}})
	}
	if err := appendSeq(files.Transcript, lines); err != nil {
		return toolkit.ClassifyDiskFull(fmt.Errorf("save transcript: %w", err))
	}
	lines = lines[:0]
	for _, r := range req.Audit {
		lines = append(lines, seqLine{seq: r.Seq, v: r})
	}
	if err := appendSeq(files.Audit, lines); err != nil {
		return toolkit.ClassifyDiskFull(fmt.Errorf("save audit: %w", err))
	}
	return nil
}

type seqLine struct {
	seq int
	v   any
}

// appendSeq appends the lines past the file's last seq. The lines are
// encoded first and written in one go; a write that fails (a full disk)
// is cut back off, so the file never keeps a torn line, and a later
// append (lastSeq) starts from a clean end either way.
func appendSeq(path string, lines []seqLine) error {
	if len(lines) == 0 {
		return nil
	}
	// Owner-only: a transcript holds everything the model read.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	last, err := lastSeq(path)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, l := range lines {
		if l.seq <= last {
			continue
		}
		b, err := json.Marshal(l.v)
		if err != nil {
			return fmt.Errorf("encode line %d: %w", l.seq, err)
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

// lastSeq returns the sequence number of the file's last complete line. A torn
// last line (a crash mid-write) is cut off so the next append starts clean.
// It reads the file backwards from its end, only as far as that line starts:
// a save costs the same on turn 300 as on turn 1.
func lastSeq(path string) (int, error) {
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

// ReadAudit reads a job's audit file (api.JobFiles.Audit).
func ReadAudit(path string) ([]approval.AuditRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []approval.AuditRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var r approval.AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return out, fmt.Errorf("audit line %d: %w", len(out)+1, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}
