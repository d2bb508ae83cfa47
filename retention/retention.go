// Package retention decides what of custos' state directory may go: the
// transcripts, blobs and audits of ended jobs, workspace caches nobody used
// for a while, old quarantine, and, past an optional cap, the oldest of
// these. It is pure of Temporal: the caller says which jobs are still open
// (a job's files' age cannot tell — a conversation may wait a week for its
// next message), and when it cannot say, no job file is touched at all.
//
// A pass is bounded (Limits) and resumable (Cursor), so the worker's
// background collection never walks a large state directory in one go.
// Overlays and host-guard snapshots are never removed here: they are a
// command's writes not yet applied, or the record the next worker needs to
// finish an interrupted command's check; the host guard clears them itself.
package retention

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
)

// Kind is what an entry of the state directory is.
type Kind string

// The kinds custos keeps.
const (
	Transcripts Kind = "transcripts"
	Audits      Kind = "audits"
	Blobs       Kind = "blobs"
	// Checkpoints are jobs' checkpoint records and the objects they name.
	Checkpoints Kind = "checkpoints"
	Caches      Kind = "caches"
	Quarantine  Kind = "quarantine"
	Overlays    Kind = "overlays"
	Snapshots   Kind = "snapshots"
	// ServerHomes are MCP servers' homes, per workspace and server.
	ServerHomes Kind = "server-homes"
)

// Kinds lists them in the order reports show them.
var Kinds = []Kind{Transcripts, Audits, Blobs, Checkpoints, Caches, ServerHomes, Quarantine, Overlays, Snapshots}

// Policy is how long each kind is kept.
type Policy struct {
	JobFiles   time.Duration // an ended job's transcript and its blobs
	Caches     time.Duration // a workspace's caches since their last use
	Quarantine time.Duration
	Audits     time.Duration // an ended job's audit
	// MaxBytes caps the state directory (0: no cap).
	MaxBytes int64
}

// FromSettings is the policy of the user's retention settings, defaults
// filled in.
func FromSettings(r approval.RetentionSettings) Policy {
	r = r.WithDefaults()
	return Policy{
		JobFiles: time.Duration(r.JobFiles), Caches: time.Duration(r.Caches),
		Quarantine: time.Duration(r.Quarantine), Audits: time.Duration(r.Audits),
		MaxBytes: r.MaxBytes,
	}
}

// Entry is one thing a plan removes (or du counts).
type Entry struct {
	Kind Kind   `json:"kind"`
	Path string `json:"path"`
	// Workspace is the workspace's directory name in the state directory
	// (workspaces/<name>-<hash>), or a cache's directory name.
	Workspace string    `json:"workspace,omitempty"`
	Job       string    `json:"job,omitempty"` // the job's file name, without .jsonl
	Bytes     int64     `json:"bytes"`
	ModTime   time.Time `json:"modTime"`
	Why       string    `json:"why"`
}

// Limits bound one pass.
type Limits struct {
	// MaxExamined is how many entries a pass looks at (stat or read);
	// MaxRemoved how many it plans to remove. 0: the defaults.
	MaxExamined int
	MaxRemoved  int
}

// Default limits: a pass over them takes well under a second on a laptop.
const (
	DefaultMaxExamined = 20000
	DefaultMaxRemoved  = 5000
)

// Input is what a pass needs.
type Input struct {
	State  string // the state directory (statedir.Dir)
	Now    time.Time
	Policy Policy
	// Open are the IDs of the jobs still open. OpenKnown false means the
	// server could not be asked: then no job file (transcript, audit,
	// blob) is removed, whatever its age.
	Open      map[string]bool
	OpenKnown bool
	Limits    Limits
	// Cursor is where the previous pass stopped (the zero Cursor: the start).
	Cursor Cursor
}

// Plan is what a pass would remove.
type Plan struct {
	Remove []Entry `json:"remove"`
	// Freed is the bytes each kind frees.
	Freed    map[Kind]int64 `json:"freed"`
	Examined int            `json:"examined"`
	// Next is where the next pass goes on; Done says this one reached the end.
	Next Cursor `json:"next"`
	Done bool   `json:"done"`
	// JobFilesKept says why no job file was considered (the open jobs
	// were unknown), or is empty.
	JobFilesKept string `json:"jobFilesKept,omitempty"`
}

// Bytes is what the plan frees in all.
func (p Plan) Bytes() int64 {
	var n int64
	for _, b := range p.Freed {
		n += b
	}
	return n
}

// FileName is the name (without .jsonl) job jobID's transcript and audit
// have in a workspace's state directory: the same mapping the activities
// write with, so an open job is recognised whatever its ID holds.
func FileName(jobID string) string {
	return strings.TrimSuffix(filepath.Base(api.JobFilesIn("", jobID).Transcript), ".jsonl")
}

// Layout of the state directory, as the activities and the sandbox write it.
const (
	workspacesDir  = "workspaces"
	sessionsDir    = "sessions"
	auditDir       = "audit"
	blobsDir       = "blobs"
	checkpointsDir = "checkpoints"
	cacheDir       = "sandbox-cache"
	quarantineDir  = "quarantine"
	overlayDir     = "overlay"
	snapshotDir    = "host-guard"
	jobExt         = ".jsonl"
)
