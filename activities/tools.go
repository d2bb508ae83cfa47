package activities

import (
	"context"
	"io/fs"
	"log/slog"
	"time"

	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/lsp"
	"github.com/custos-dev/custos/sandbox"
)

// Tools implements the six tool activities. The worker registers a *Tools
// value, so each exported method is an activity named after it ("Read",
// "Glob", …, matching api's *Activity constants). Every method turns bad
// input and failed file operations into an api.ToolResult with IsError set;
// an activity error is returned only when the activity itself cannot finish
// (its context was cancelled), so Temporal never retries the model's
// mistakes.
type Tools struct {
	// Sandbox runs Bash commands; nil makes Bash answer with an error result.
	Sandbox sandbox.Sandbox
	// Logger receives one line per tool call; nil means slog.Default().
	Logger *slog.Logger
	// HeartbeatInterval is how often Bash heartbeats while its command
	// runs; 0 means every second. The workflow's HeartbeatTimeout must be
	// larger, so a crashed worker is noticed within that timeout.
	HeartbeatInterval time.Duration
	// LSPServers are the language servers LSP asks, kept warm between
	// calls; nil makes LSP answer that this worker runs none.
	LSPServers *lsp.Pool
}

func (t *Tools) log() *slog.Logger {
	if t.Logger != nil {
		return t.Logger
	}
	return slog.Default()
}

// maxEditFileSize bounds the file Edit loads into memory.
const maxEditFileSize = 64 << 20

// walkEntry is one file found by Glob or Grep.
type walkEntry struct {
	rel   string // slash-separated, relative to the workspace
	mtime time.Time
	size  int64
}

// custosOwn are custos' own directories in a workspace, never listed to the
// model: where jobs that began before transcripts moved to the state
// directory still keep theirs (api.SessionFile, api.AuditFile).
var custosOwn = map[string]bool{".custos/sessions": true, ".custos/audit": true}

// walkFiles lists regular files and symlinks under dirRel (relative to the
// canonical workspace) without following symlinks — not even a directory
// swapped for one during the walk (toolkit.WalkFiles) — skipping .git
// directories, custos' own directories and unreadable subtrees. The order
// is lexical, hence deterministic.
func walkFiles(ctx context.Context, tgt *toolkit.Target, visit func(walkEntry) error) error {
	skip := func(rel string) bool { return custosOwn[rel] }
	return toolkit.WalkFiles(ctx, tgt.Root, tgt.Rel, skip, func(rel string, fi fs.FileInfo) error {
		return visit(walkEntry{rel: rel, mtime: fi.ModTime(), size: fi.Size()})
	})
}
