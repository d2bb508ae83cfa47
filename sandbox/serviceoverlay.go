package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/custos-dev/custos/sandbox/hostguard"
)

// ErrNoServiceOverlay says this worker's sandbox cannot show a server the
// workspace through an overlay of its own (Request.ServiceOverlay).
var ErrNoServiceOverlay = errors.New("this worker's sandbox mounts no workspace overlay (it needs bubblewrap with custos' mount step and overlayfs in a user namespace), so no server can write the workspace through one")

// serviceOverlays says whether b can run a service on an overlay.
func (b *bwrapSandbox) serviceOverlays() error {
	if b.step == nil || !b.overlay || b.noHostGuard {
		return ErrNoServiceOverlay
	}
	return nil
}

// ServiceOverlays is what a server that writes workspace ws through an
// overlay of its own needs of sb (hostguard.Services: the overlay, and a
// watch over each call), and ws's real path.
func ServiceOverlays(sb Sandbox, ws string) (hostguard.Services, string, error) {
	b, ok := sb.(*bwrapSandbox)
	if !ok {
		return hostguard.Services{}, "", ErrNoServiceOverlay
	}
	if err := b.serviceOverlays(); err != nil {
		return hostguard.Services{}, "", err
	}
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return hostguard.Services{}, "", fmt.Errorf("sandbox: workspace: %w", err)
	}
	return hostguard.Services{Settings: b.cfg.guard(), Listings: b.listings, Overlays: b.overlays}, real, nil
}
