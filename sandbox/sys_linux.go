//go:build linux

package sandbox

import (
	"errors"
	"syscall"
	"time"

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

// openPidfd is a pidfd of pid; false: none (Linux before 5.3, or pid
// gone).
func openPidfd(pid int) (int, bool) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return 0, false
	}
	return fd, true
}

func closeFD(fd int) { _ = unix.Close(fd) }

// killAndWait sends SIGKILL to the process of the pidfd fd and waits until
// it has exited (the pidfd turns readable once it is a zombie), for at
// most d. false: it could not signal it (the caller falls back to /proc).
func killAndWait(fd int, d time.Duration) bool {
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return false
	}
	deadline := time.Now().Add(d)
	for {
		ms := time.Until(deadline).Milliseconds()
		if ms <= 0 {
			return true
		}
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(ms))
		if !errors.Is(err, unix.EINTR) {
			return err == nil
		}
	}
}
