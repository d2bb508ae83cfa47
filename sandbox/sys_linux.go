//go:build linux

package sandbox

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// setParentDeathSignal kills the child (bwrap, which takes the sandbox with
// it) if the worker dies.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// cgroupSysProcAttr starts the child inside the cgroup open at fd
// (CLONE_INTO_CGROUP), so it never runs outside its process limit.
func cgroupSysProcAttr(fd int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
}

// renameNoReplace renames src to dst unless dst exists (EEXIST then).
func renameNoReplace(src, dst string) error {
	return unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
}
