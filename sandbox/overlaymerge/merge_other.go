//go:build !linux

package overlaymerge

import "errors"

// Stats is what a merge did; see merge_linux.go.
type Stats struct {
	Entries, Renamed, Copied, Removed int
	SetID, Special                    []string
}

// Apply needs Linux: only there does a run have an overlay, so there
// is never an upper layer to apply elsewhere.
func Apply(upper, ws string) (Stats, error) {
	return Stats{}, errors.New("sandbox: merge upper layer: needs Linux")
}
