//go:build !linux

package sandbox

import "errors"

// mergeStats is what a merge did; see overlaymerge_linux.go.
type mergeStats struct {
	Entries, Renamed, Copied, Removed int
	SetID, Special                    []string
}

// mergeUpper needs Linux: only there does a run have an overlay, so there
// is never an upper layer to apply elsewhere.
func mergeUpper(upper, ws string) (mergeStats, error) {
	return mergeStats{}, errors.New("sandbox: merge upper layer: needs Linux")
}
