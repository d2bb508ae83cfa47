package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/hostguard"
)

// A long-lived server that writes the workspace (an MCP server whose entry
// says writeWorkspace) does so as a Bash command does, never straight: it
// sees the workspace through an overlay of its own (Request.ServiceOverlay,
// made by NewServiceOverlay in the host guard's overlay directory), and
// what it wrote during one call is judged by the host guard exactly as a
// command's writes are — protected names withheld, version-control files
// checked on the merged view, the job's checkpoint told first — and only
// then applied (ServiceWrites.Finish). An overlay's upper layer cannot be
// emptied while it is mounted, so the server must be gone before Finish:
// its caller stops it and starts it afresh for the next call.

// ErrNoServiceOverlay says this worker's sandbox cannot show a server the
// workspace through an overlay of its own.
var ErrNoServiceOverlay = errors.New("this worker's sandbox mounts no workspace overlay (it needs bubblewrap with custos' mount step and overlayfs in a user namespace), so no server can write the workspace through one")

// serviceOverlays says whether b can run a service on an overlay.
func (b *bwrapSandbox) serviceOverlays() error {
	if b.step == nil || !b.overlay || b.noHostGuard {
		return ErrNoServiceOverlay
	}
	return nil
}

// bwrapOf is sb as the bubblewrap sandbox that runs services on overlays.
func bwrapOf(sb Sandbox) (*bwrapSandbox, error) {
	b, ok := sb.(*bwrapSandbox)
	if !ok {
		return nil, ErrNoServiceOverlay
	}
	return b, b.serviceOverlays()
}

// NewServiceOverlay makes an overlay directory for a server that writes
// workspace ws, for Request.ServiceOverlay. The host guard's sweep applies
// it, failing closed, should this process die with it unapplied.
func NewServiceOverlay(sb Sandbox, ws string) (string, error) {
	b, err := bwrapOf(sb)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return "", fmt.Errorf("sandbox: workspace: %w", err)
	}
	return b.overlays.Take(b.cfg.guard(), real)
}

// ServiceWrites is the host guard's watch over one call of a server on an
// overlay of its own: the snapshot before it, and the overlay.
type ServiceWrites struct {
	guard   *hostguard.Guard
	overlay string
}

// WatchServiceOverlay takes the host-config snapshot before a call of the
// server whose overlay is dir (the same as before a Bash command; what an
// interrupted earlier run in ws left is finished first). Finish or Release
// it once the call ended.
func WatchServiceOverlay(sb Sandbox, ws, dir string) (*ServiceWrites, error) {
	b, err := bwrapOf(sb)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return nil, fmt.Errorf("sandbox: workspace: %w", err)
	}
	g := b.cfg.guard().GuardWith(real, b.listings, b.listings.Take(real), dir, b.overlays)
	return &ServiceWrites{guard: g, overlay: dir}, nil
}

// Wrote reports whether the server's upper layer holds anything (what it
// wrote during the call, or before it): one that cannot be read counts,
// one that is gone does not.
func (w *ServiceWrites) Wrote() bool {
	ents, err := os.ReadDir(filepath.Join(w.overlay, "upper"))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return err != nil || len(ents) > 0
}

// Release ends the watch of a call that wrote nothing, the server still
// running on its overlay.
func (w *ServiceWrites) Release() { w.guard.Release() }

// Finish judges what the server wrote, once it is gone (nothing has the
// overlay mounted), as a Bash command's writes are judged, tells
// beforeMerge (the job's checkpoint) and applies it; the overlay directory
// is then given back (the next server gets a new one). The report says
// what was neutralised, withheld or not applied.
func (w *ServiceWrites) Finish(beforeMerge hostguard.MergeHook) hostguard.Report {
	var rep hostguard.Report
	w.guard.OnMerge(beforeMerge)
	w.guard.Finish(&rep)
	return rep
}

// DropServiceOverlay removes a server's overlay directory that nothing
// has mounted (its server did not start, or is gone, having written
// nothing).
func DropServiceOverlay(dir string) { _ = hostfs.RemoveAllWritable(dir) }
