package sandbox

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

// reap kills a sandbox's init that outlived bwrap and returns once it is
// gone; it never signals a process that only has the init's PID.
func TestReapKillsTheInitThatOutlivedBwrap(t *testing.T) {
	for _, tc := range []struct {
		name            string
		sameInit, pidfd bool
	}{{"the init itself", true, false}, {"the init itself, through its pidfd", true, true}, {"a process that took its PID", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sleep", "100")
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			w := &statusWatch{initStart: hostfs.ProcStart(cmd.Process.Pid)}
			require.NotEmpty(t, w.initStart)
			if !tc.sameInit {
				w.initStart += "0" // recorded for another process
			}
			w.initPID.Store(int64(cmd.Process.Pid))
			if tc.pidfd {
				w.pidfd, w.hasPidfd = openPidfd(cmd.Process.Pid)
				require.True(t, w.hasPidfd, "this kernel has pidfd_open")
			}
			t0 := time.Now()
			w.reap()
			if !tc.sameInit {
				select {
				case err := <-done:
					t.Fatalf("a process that is not the init was signalled: %v", err)
				case <-time.After(200 * time.Millisecond):
				}
				return
			}
			select {
			case err := <-done:
				var ee *exec.ExitError
				require.ErrorAs(t, err, &ee)
				ws := ee.Sys().(syscall.WaitStatus)
				assert.Equal(t, syscall.SIGKILL, ws.Signal())
			case <-time.After(5 * time.Second):
				t.Fatal("the init was not killed")
			}
			assert.Less(t, time.Since(t0), 2500*time.Millisecond, "reap waits at most about two seconds")
		})
	}
}
