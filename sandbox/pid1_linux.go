package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// helperPid1 is the sandbox's PID 1 when there is no mount step (its C
// init, cm_init, does the same): bubblewrap runs it with --as-pid-1 in
// place of its own init, which is dumpable and not under the seccomp
// filter, so a command could open its memory and run code past the
// filter. This one is not dumpable (its /proc entries are closed to the
// command), hands the command no descriptor but the standard three, forks
// it, reaps whatever is orphaned until it ends, and exits with its status
// (128+N for signal N, as bubblewrap's init reports it); the kernel then
// kills what is left in the namespace. args: -- CMD ARGS...
func helperPid1(args []string) int {
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintln(os.Stderr, "custos-sandbox: usage: "+pid1Marker+" -- CMD...")
		return 125
	}
	argv := args[1:]
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "custos-sandbox: make the sandbox's init undumpable: %v\n", err)
		return 125
	}
	if err := closeInheritedOnExec(); err != nil {
		fmt.Fprintf(os.Stderr, "custos-sandbox: %v\n", err)
		return 125
	}
	path, err := exec.LookPath(argv[0])
	if err != nil && !errors.Is(err, exec.ErrDot) {
		fmt.Fprintf(os.Stderr, "custos-sandbox: %s: command not found\n", argv[0])
		return 127
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "custos-sandbox: %s: %v\n", argv[0], err)
		return 126
	}
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, unix.WALL, nil)
		switch {
		case p == pid && ws.Exited():
			return ws.ExitStatus()
		case p == pid && ws.Signaled():
			return 128 + int(ws.Signal())
		case err != nil && err != syscall.EINTR:
			return 125
		}
	}
}

// closeInheritedOnExec marks every descriptor but the standard three
// close-on-exec: what this process inherited (from the worker's own
// parent, through bubblewrap) must not reach the command.
func closeInheritedOnExec() error {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list the inherited descriptors: %w", err)
	}
	for _, e := range ents {
		var fd int
		if _, err := fmt.Sscan(e.Name(), &fd); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}
