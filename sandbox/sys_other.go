//go:build !linux

package sandbox

import (
	"syscall"
	"time"
)

// Elsewhere there is no parent-death signal; the fallback backend kills the
// process group on timeout and cancellation instead.
func setParentDeathSignal(*syscall.SysProcAttr) {}

// There are no cgroups outside Linux, and bubblewrap (their only user) is
// never available there.
func cgroupSysProcAttr(int) *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// No pidfds outside Linux; bubblewrap, their only user, is Linux's alone.
func openPidfd(int) (int, bool)           { return 0, false }
func closeFD(int)                         {}
func killAndWait(int, time.Duration) bool { return false }
