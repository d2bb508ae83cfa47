package activities

import (
	"cmp"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/checkpoint"
	"github.com/custos-dev/custos/sandbox/hostguard"
)

// recordFileWrite records, before a Write or Edit replaces rel in tgt's
// workspace with data, what is there now (and each parent directory the
// write will create) and what will be. Its Done is for after the write.
func recordFileWrite(req api.ToolRequest, tool string, tgt *toolkit.Target, data []byte) (*checkpoint.Recording, error) {
	r, err := toolkit.StartCheckpoint(req, tool, tgt.Show, tgt.WS)
	if r == nil || err != nil {
		return nil, err
	}
	fail := func(err error) (*checkpoint.Recording, error) {
		r.Close()
		return nil, fmt.Errorf("record a checkpoint: %w", err)
	}
	// The parents toolkit.WriteAtomic's MkdirAll will make, outermost first.
	var parents []string
	for d := filepath.Dir(tgt.Rel); d != "." && d != string(filepath.Separator); d = filepath.Dir(d) {
		if _, err := tgt.Root.Lstat(d); err == nil {
			break
		}
		parents = append([]string{d}, parents...)
	}
	for _, d := range parents {
		if err := r.Before(d); err != nil {
			return fail(err)
		}
		r.After(d, checkpoint.Entry{Kind: checkpoint.Dir, Mode: 0o755})
	}
	if err := r.Before(tgt.Rel); err != nil {
		return fail(err)
	}
	mode := fs.FileMode(0o644)
	if fi, err := tgt.Root.Lstat(tgt.Rel); err == nil && fi.Mode().IsRegular() {
		mode = fi.Mode().Perm()
	}
	if err := r.AfterData(tgt.Rel, data, mode); err != nil {
		return fail(err)
	}
	if err := r.Commit(); err != nil {
		return fail(err)
	}
	return r, nil
}

// closeCheckpoint leaves r not done: the write failed, and the record
// accepts either side of it.
func closeCheckpoint(r *checkpoint.Recording) {
	if r != nil {
		r.Close()
	}
}

// doneCheckpoint marks r applied after its change (nil r: none).
func (t *Tools) doneCheckpoint(r *checkpoint.Recording) {
	if r == nil {
		return
	}
	defer r.Close()
	if err := r.Done(); err != nil {
		// The record stays "not done": a rewind then accepts either side.
		t.log().Warn("checkpoint: mark applied", "err", err)
	}
}

// bashCheckpoint is a Bash call's checkpoint: the sandbox tells it of the
// command's overlay before applying it (hook); the record is made there.
type bashCheckpoint struct {
	t    *Tools
	req  api.ToolRequest
	what string
	// tool is the call's tool ("": Bash); an MCP server's that writes the
	// workspace has its writes recorded the same way (mcpwrites.go).
	tool   string
	mu     sync.Mutex
	merged bool // the hook ran: the command wrote through an overlay
}

// hook is the sandbox's MergeHook for the call, nil when it records none.
func (b *bashCheckpoint) hook() hostguard.MergeHook {
	if b.req.Checkpoints == "" {
		return nil
	}
	return func(upper string) (func(error), error) {
		b.mu.Lock()
		b.merged = true
		b.mu.Unlock()
		ws, err := filepath.EvalSymlinks(b.req.Workspace)
		if err != nil {
			return nil, err
		}
		r, err := toolkit.StartCheckpoint(b.req, cmp.Or(b.tool, api.BashActivity), b.what, ws)
		if err != nil {
			return nil, err
		}
		b.notes(r)
		if err := r.FromUpper(upper); err != nil {
			r.Close()
			return nil, err
		}
		if err := r.Commit(); err != nil {
			r.Close()
			return nil, err
		}
		return func(merr error) {
			if merr != nil {
				r.Close() // part applied: the record accepts either side
				return
			}
			b.t.doneCheckpoint(r)
		}, nil
	}
}

// unrecorded notes, for a command that ran without an overlay, that what
// it changed is not in the job's checkpoints and cannot be taken back.
func (b *bashCheckpoint) unrecorded(why string) {
	b.mu.Lock()
	merged := b.merged
	b.mu.Unlock()
	if b.req.Checkpoints == "" || merged {
		return
	}
	r, err := toolkit.StartCheckpoint(b.req, api.BashActivity, b.what, b.req.Workspace)
	if err != nil {
		b.t.log().Warn("checkpoint: note an unrecorded command", "err", err)
		return
	}
	r.Note(why)
	b.notes(r)
	if err := r.Commit(); err != nil {
		b.t.log().Warn("checkpoint: note an unrecorded command", "err", err)
		return
	}
	b.t.doneCheckpoint(r)
}

// notes says in r what of the command no checkpoint holds: what it did
// over the network.
func (b *bashCheckpoint) notes(r *checkpoint.Recording) {
	if d := b.req.Sandbox.Network.AllowedDomains; len(d) > 0 {
		r.Note(fmt.Sprintf("the command could reach the network (%s): what it did there cannot be taken back", strings.Join(d, ", ")))
	}
}
