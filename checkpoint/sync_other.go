//go:build !linux

package checkpoint

import (
	"errors"
	"os"
)

// syncObjects makes the new objects durable, one by one where there is
// no syncfs.
func syncObjects(_ string, fresh []stored) (bool, error) { return false, fsyncCopies(fresh) }

// linkInode is Linux's: elsewhere objects are copies.
func linkInode(*os.File, string) error { return errors.ErrUnsupported }
