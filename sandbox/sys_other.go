//go:build !linux

package sandbox

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Elsewhere there is no parent-death signal; the fallback backend kills the
// process group on timeout and cancellation instead.
func setParentDeathSignal(*syscall.SysProcAttr) {}

// There are no cgroups outside Linux, and bubblewrap (their only user) is
// never available there.
func cgroupSysProcAttr(int) *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// renameNoReplace is Linux's renameat2 RENAME_NOREPLACE; elsewhere the
// placeholder pool (bubblewrap's, so Linux's alone) does without it.
func renameNoReplace(src, dst string) error { return syscall.ENOSYS }

// No pidfds outside Linux; bubblewrap, their only user, is Linux's alone.
func openPidfd(int) (int, bool)           { return 0, false }
func closeFD(int)                         {}
func killAndWait(int, time.Duration) bool { return false }

// emptyDir reports whether path is a directory (not a link to one) with
// nothing in it.
func emptyDir(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return errors.Is(err, io.EOF)
}
