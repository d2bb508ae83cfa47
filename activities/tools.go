package activities

import (
	"context"
	"io/fs"
	"log/slog"
	"path/filepath"
	"time"

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
// canonical workspace) without following symlinked directories — a symlink
// can never lead the walk out of the workspace — skipping .git directories,
// custos' own directories and unreadable subtrees. The order is lexical,
// hence deterministic.
func walkFiles(ctx context.Context, canonWS, dirRel string, visit func(walkEntry) error) error {
	start := filepath.Join(canonWS, dirRel)
	return filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == start {
				return err
			}
			// An unreadable subtree is skipped, not fatal: the rest of the
			// workspace is still worth searching.
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if d.IsDir() {
			if d.Name() == ".git" && path != start {
				return fs.SkipDir
			}
			if rel, err := filepath.Rel(canonWS, path); err == nil && custosOwn[filepath.ToSlash(rel)] {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(canonWS, path)
		if err != nil {
			return nil
		}
		return visit(walkEntry{rel: filepath.ToSlash(rel), mtime: info.ModTime(), size: info.Size()})
	})
}
