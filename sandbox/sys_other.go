//go:build !linux

package sandbox

import "syscall"

// Elsewhere there is no parent-death signal; the fallback backend kills the
// process group on timeout and cancellation instead.
func setParentDeathSignal(*syscall.SysProcAttr) {}

// There are no cgroups outside Linux, and bubblewrap (their only user) is
// never available there.
func cgroupSysProcAttr(int) *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// renameNoReplace is Linux's renameat2 RENAME_NOREPLACE; elsewhere the
// placeholder pool (bubblewrap's, so Linux's alone) does without it.
func renameNoReplace(src, dst string) error { return syscall.ENOSYS }
