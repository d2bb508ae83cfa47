//go:build !linux

package hostfs

import (
	"errors"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// RenameNoReplace is Linux's renameat2 RENAME_NOREPLACE; elsewhere the
// placeholder pool (bubblewrap's, so Linux's alone) does without it.
func RenameNoReplace(src, dst string) error { return syscall.ENOSYS }

// EmptyDir reports whether path is a directory (not a link to one) with
// nothing in it.
func EmptyDir(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return errors.Is(err, io.EOF)
}
