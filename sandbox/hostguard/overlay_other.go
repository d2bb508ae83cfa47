//go:build !linux

package hostguard

import (
	"errors"
	"io"
)

// viewCheck needs Linux's namespaces and overlayfs; no run elsewhere has
// an overlay.
func viewCheck(*Guard) (viewResult, error) {
	return viewResult{}, errors.New("the merged view needs Linux")
}

func RunHelper(io.Reader, io.Writer) int { return 1 }

func overlayOpaque(string) bool { return true }
