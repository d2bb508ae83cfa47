package activities

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/activities/transcript"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/settingsfile"
)

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
	lines := make([]transcript.SeqLine, 0, len(req.Messages))
	for i, m := range req.Messages {
		lines = append(lines, transcript.SeqLine{Seq: req.FirstMessage + i + 1, V: transcript.Line{Seq: req.FirstMessage + i + 1, Msg: m}})
	}
	if err := transcript.AppendSeq(files.Transcript, lines); err != nil {
		return toolkit.ClassifyDiskFull(fmt.Errorf("save transcript: %w", err))
	}
	lines = lines[:0]
	for _, r := range req.Audit {
		lines = append(lines, transcript.SeqLine{Seq: r.Seq, V: r})
	}
	if err := transcript.AppendSeq(files.Audit, lines); err != nil {
		return toolkit.ClassifyDiskFull(fmt.Errorf("save audit: %w", err))
	}
	return nil
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
