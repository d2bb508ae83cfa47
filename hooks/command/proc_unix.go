//go:build unix

package command

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup starts the hook in its own process group and makes context
// cancellation kill the whole group: `sh -c 'sleep 10'` forks, and killing only
// the shell would leave the sleep running with our pipes open.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killProcessGroup(cmd) }
}

func killProcessGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
