//go:build !linux

package checkpoint

import "errors"

// FromUpper needs Linux: only there does the sandbox run on an overlay.
func (r *Recording) FromUpper(upper string) error {
	return errors.New("checkpoint: an overlay's upper layer is read on Linux only")
}
