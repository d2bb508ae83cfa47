// Package policyreplay reads what custos' audit holds about past calls and
// judges a policy with it: Replay runs layers 1-4 of proposed settings over
// the recorded calls (`starter policy replay`), Suggest proposes the
// narrowest allow rules the recorded answers support (`policy suggest`) and
// Summarise counts who answered what (`audit stats`). Nothing here runs a
// tool or a user's hook: recorded answers stand for them.
package policyreplay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/internal/statedir"
)

// Job is one job's recorded audit trail.
type Job struct {
	ID string `json:"id"`
	// Workspace is the job's workspace, as its state directory (or its
	// status) names it.
	Workspace string `json:"workspace"`
	// Source says where the records were read: a file, or "temporal".
	Source  string                 `json:"source"`
	Records []approval.AuditRecord `json:"-"`
}

// Filter selects the records to read: since a time, of one workspace, of
// one job; zero values select everything.
type Filter struct {
	Since     time.Time
	Workspace string
	JobID     string
}

// Keep reports whether a job of workspace ws and id passes the filter.
func (f Filter) Keep(ws, id string) bool {
	return (f.Workspace == "" || filepath.Clean(f.Workspace) == filepath.Clean(ws)) &&
		(f.JobID == "" || f.JobID == id)
}

// Trim drops the calls decided before f.Since. Events are kept whatever
// their time: the job's first record holds its policy facts, and a mode
// change before Since still sets the mode of the calls after it.
func (f Filter) Trim(recs []approval.AuditRecord) []approval.AuditRecord {
	if f.Since.IsZero() {
		return recs
	}
	out := recs[:0:0]
	for _, r := range recs {
		if r.Event != "" || !r.Time.Before(f.Since) {
			out = append(out, r)
		}
	}
	return out
}

// FromStateDir reads the audit files of every job under custos' state
// directory state (statedir.Dir: workspaces/<name>-<hash>/audit/<job>.jsonl,
// the workspace named by the file beside them), and, for a workspace
// named in f, the audits of its older jobs still in <workspace>/.custos/audit.
// A line that is not an audit record is an error naming the file and line.
func FromStateDir(state string, f Filter) ([]Job, error) {
	dirs, err := filepath.Glob(filepath.Join(state, "workspaces", "*"))
	if err != nil {
		return nil, fmt.Errorf("policyreplay: listing %s: %w", state, err)
	}
	var jobs []Job
	for _, dir := range dirs {
		ws, err := os.ReadFile(filepath.Join(dir, "workspace"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // not a workspace's directory
		}
		if err != nil {
			return nil, fmt.Errorf("policyreplay: %w", err)
		}
		name := strings.TrimSpace(string(ws))
		if f.Workspace != "" && filepath.Clean(name) != filepath.Clean(f.Workspace) {
			continue
		}
		js, err := fromAuditDir(filepath.Join(dir, "audit"), name, f)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, js...)
	}
	if f.Workspace != "" {
		js, err := fromAuditDir(filepath.Join(f.Workspace, ".custos", "audit"), f.Workspace, f)
		if err != nil {
			return nil, err
		}
		jobs = mergeJobs(jobs, js)
	}
	sortJobs(jobs)
	return jobs, nil
}

// StateDir is custos' state directory (statedir.Dir), for callers that
// read the default one.
func StateDir() (string, error) { return statedir.Dir() }

func fromAuditDir(dir, ws string, f Filter) ([]Job, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("policyreplay: listing %s: %w", dir, err)
	}
	var jobs []Job
	for _, file := range files {
		id := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		recs, err := ReadAuditFile(file)
		if err != nil {
			return nil, err
		}
		if len(recs) > 0 && recs[0].JobID != "" {
			id = recs[0].JobID
		}
		if !f.Keep(ws, id) {
			continue
		}
		jobs = append(jobs, Job{ID: id, Workspace: ws, Source: file, Records: f.Trim(recs)})
	}
	return jobs, nil
}

// ReadAuditFile reads one job's audit file (JSON lines of
// approval.AuditRecord). A broken line is an error naming file and line;
// nothing is written.
func ReadAuditFile(path string) ([]approval.AuditRecord, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policyreplay: reading audit: %w", err)
	}
	return ParseAudit(path, data)
}

// ParseAudit parses audit JSON lines; name is what errors call the input.
func ParseAudit(name string, data []byte) ([]approval.AuditRecord, error) {
	var out []approval.AuditRecord
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var r approval.AuditRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("policyreplay: audit %s line %d is not an audit record: %w", name, line, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("policyreplay: audit %s after line %d: %w", name, line, err)
	}
	return out, nil
}

// MergeRecords joins a job's records from its file and from the audit
// query by sequence number: the query also holds what is not yet saved.
func MergeRecords(file, query []approval.AuditRecord) []approval.AuditRecord {
	last := 0
	if len(file) > 0 {
		last = file[len(file)-1].Seq
	}
	for _, r := range query {
		if r.Seq > last {
			file = append(file, r)
		}
	}
	return file
}

// mergeJobs adds the jobs of more to jobs, those already there (by ID)
// left as they are.
func mergeJobs(jobs, more []Job) []Job {
	have := map[string]bool{}
	for _, j := range jobs {
		have[j.ID] = true
	}
	for _, j := range more {
		if !have[j.ID] {
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// sortJobs orders jobs by their first record's time, then ID: a replay's
// output must not depend on the order directories are listed in.
func sortJobs(jobs []Job) {
	first := func(j Job) time.Time {
		if len(j.Records) == 0 {
			return time.Time{}
		}
		return j.Records[0].Time
	}
	sort.SliceStable(jobs, func(a, b int) bool {
		ta, tb := first(jobs[a]), first(jobs[b])
		if !ta.Equal(tb) {
			return ta.Before(tb)
		}
		return jobs[a].ID < jobs[b].ID
	})
}

// SortJobs is sortJobs for jobs gathered elsewhere (visibility).
func SortJobs(jobs []Job) { sortJobs(jobs) }
