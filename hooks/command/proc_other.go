//go:build !unix

package command

import "os/exec"

// Without process groups only the shell itself can be killed; the default
// exec.CommandContext cancellation does that.
func setProcessGroup(cmd *exec.Cmd) {}

func killProcessGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
