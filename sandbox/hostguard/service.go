package hostguard

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

// A long-lived server that writes the workspace (an MCP server whose entry
// says writeWorkspace) sees it through an overlay of its own, made as a
// command's is (OverlayPool.Take), and what it wrote during one call is
// judged exactly as a command's writes are, then applied (ServiceWatch).
// An upper layer cannot be emptied while it is mounted: the server is
// gone before Finish, and its caller starts it afresh.

// ServiceWatch is the host guard's watch over one call of a server on an
// overlay of its own: the snapshot before the call, and the overlay.
type ServiceWatch struct {
	g *Guard
}

// Services is what a sandbox that runs servers on overlays of their own
// lends them: its guard's settings, its listings and its overlays' pool.
type Services struct {
	Settings Settings
	Listings *hostfs.HostListings
	Overlays *OverlayPool
}

// NewOverlay makes an overlay directory for a server that writes ws
// (canonical). The sweep applies it, failing closed, should this process
// die with it unapplied.
func (s Services) NewOverlay(ws string) (string, error) { return s.Overlays.Take(s.Settings, ws) }

// Watch takes the host-config snapshot before a call of the server whose
// overlay is dir in ws (canonical), as before a command.
func (s Services) Watch(ws, dir string) *ServiceWatch {
	return &ServiceWatch{g: s.Settings.GuardWith(ws, s.Listings, s.Listings.Take(ws), dir, s.Overlays)}
}

// Wrote reports whether the server's upper layer holds anything (what it
// wrote during the call, or before it): one that cannot be read counts,
// one that is gone does not.
func (w *ServiceWatch) Wrote() bool {
	ents, err := os.ReadDir(filepath.Join(w.g.overlay, "upper"))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return err != nil || len(ents) > 0
}

// Release ends the watch of a call that wrote nothing: the snapshot's file
// is emptied and the listings kept; nothing is checked or applied, and the
// overlay, which its server may still have mounted, is not given back.
func (w *ServiceWatch) Release() {
	g := w.g
	if g.pending != nil {
		g.pending.done()
	}
	if g.recoveredFrom != "" {
		_ = os.Remove(g.recoveredFrom)
	}
	g.listings.Put(g.ws, g.before.dirs.Done())
}

// Finish judges what the server wrote, once nothing has the overlay
// mounted, as a command's writes are judged, tells beforeMerge (the job's
// checkpoint) and applies it; the overlay directory is then given back.
// The report says what was neutralised, withheld or not applied.
func (w *ServiceWatch) Finish(beforeMerge MergeHook) Report {
	var rep Report
	w.g.OnMerge(beforeMerge)
	w.g.Finish(&rep)
	return rep
}

// DropOverlay removes a server's overlay directory that nothing has
// mounted (its server did not start, or is gone having written nothing).
func DropOverlay(dir string) { _ = hostfs.RemoveAllWritable(dir) }
