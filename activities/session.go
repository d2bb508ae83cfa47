package activities

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/approval"
)

// SaveSessionRequest carries what a job has not yet written to its workspace.
type SaveSessionRequest struct {
	Workspace string `json:"workspace"`
	JobID     string `json:"jobId"`
	// FirstMessage is the index (in the whole conversation) of Messages[0].
	FirstMessage int                            `json:"firstMessage"`
	Messages     []openai.ChatCompletionMessage `json:"messages,omitempty"`
	Audit        []approval.AuditRecord         `json:"audit,omitempty"`
}

// transcriptLine is one line of .custos/sessions/<job>.jsonl.
type transcriptLine struct {
	Seq int `json:"seq"`
	openai.ChatCompletionMessage
}

// SessionDir and AuditDir are where a job's files live in its workspace.
func SessionFile(workspace, jobID string) string {
	return filepath.Join(workspace, ".custos", "sessions", safeName(jobID)+".jsonl")
}

// AuditFile is the audit trail of one job.
func AuditFile(workspace, jobID string) string {
	return filepath.Join(workspace, ".custos", "audit", safeName(jobID)+".jsonl")
}

// SaveSession appends new transcript messages and audit records. Every line
// carries a sequence number and only lines past the file's last one are
// written, so a retried save never duplicates anything.
func SaveSession(ctx context.Context, req SaveSessionRequest) error {
	if req.Workspace == "" || req.JobID == "" {
		return fmt.Errorf("save session: workspace and job id are required")
	}
	lines := make([]seqLine, 0, len(req.Messages))
	for i, m := range req.Messages {
		lines = append(lines, seqLine{seq: req.FirstMessage + i + 1, v: transcriptLine{Seq: req.FirstMessage + i + 1, ChatCompletionMessage: m}})
	}
	if err := appendSeq(SessionFile(req.Workspace, req.JobID), lines); err != nil {
		return fmt.Errorf("save transcript: %w", err)
	}
	lines = lines[:0]
	for _, r := range req.Audit {
		lines = append(lines, seqLine{seq: r.Seq, v: r})
	}
	if err := appendSeq(AuditFile(req.Workspace, req.JobID), lines); err != nil {
		return fmt.Errorf("save audit: %w", err)
	}
	return nil
}

type seqLine struct {
	seq int
	v   any
}

func appendSeq(path string, lines []seqLine) error {
	if len(lines) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	last, err := lastSeq(path)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, l := range lines {
		if l.seq <= last {
			continue
		}
		b, err := json.Marshal(l.v)
		if err != nil {
			f.Close()
			return fmt.Errorf("encode line %d: %w", l.seq, err)
		}
		w.Write(b)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// lastSeq returns the sequence number of the file's last complete line. A torn
// last line (a crash mid-write) is cut off so the next append starts clean.
func lastSeq(path string) (int, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	end := len(data)
	if end > 0 && data[end-1] != '\n' {
		cut := 0
		for i := end - 1; i >= 0; i-- {
			if data[i] == '\n' {
				cut = i + 1
				break
			}
		}
		if err := os.Truncate(path, int64(cut)); err != nil {
			return 0, fmt.Errorf("repair torn line: %w", err)
		}
		data = data[:cut]
		end = cut
	}
	if end == 0 {
		return 0, nil
	}
	start := 0
	for i := end - 2; i >= 0; i-- {
		if data[i] == '\n' {
			start = i + 1
			break
		}
	}
	var l struct {
		Seq int `json:"seq"`
	}
	if err := json.Unmarshal(data[start:end], &l); err != nil {
		return 0, fmt.Errorf("read last line of %s: %w", path, err)
	}
	return l.Seq, nil
}

// ReadAudit reads a job's audit file.
func ReadAudit(workspace, jobID string) ([]approval.AuditRecord, error) {
	f, err := os.Open(AuditFile(workspace, jobID))
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

// safeName keeps a workflow id usable as a file name.
func safeName(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		return "_" + string(b)
	}
	return string(b)
}
