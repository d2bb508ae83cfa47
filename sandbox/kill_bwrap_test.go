package sandbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

// stoppedWith waits until a process whose command line holds token is
// stopped (state T), and fails the test after limit.
func stoppedWith(t *testing.T, token string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		for _, p := range processesWith(token) {
			pid, _ := strconv.Atoi(strings.SplitN(p, ":", 2)[0])
			if state, _, err := hostfs.ProcStat(pid); err == nil && state == 'T' {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no process of the command was stopped after %s", limit)
}

// A command stopped whole (SIGSTOP) when it is killed gets its SIGTERM at
// once (a SIGCONT follows it), not only the SIGKILL after the grace: its
// handler runs. The sandbox's grace here is 30 s, so without the SIGCONT
// the command would die at the SIGKILL with its handler never run.
func TestBwrapStoppedCommandHandlesItsSIGTERM(t *testing.T) {
	sb := newBwrap(t, Config{KillGrace: 30 * time.Second})
	token := fmt.Sprintf("custos-stopped-%d", time.Now().UnixNano())
	script := "# " + token + "\ntrap 'echo got-term; exit 3' TERM; kill -STOP $$; echo resumed-without-term"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ran struct {
		res Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := sb.Run(ctx, Request{Workspace: t.TempDir(), Argv: bash(script), Timeout: time.Minute})
		done <- ran{res, err}
	}()
	stoppedWith(t, token, 30*time.Second)
	cancel()
	r := <-done
	require.NoError(t, r.err)
	t.Logf("exit=%d killed=%v reason=%q duration=%s", r.res.ExitCode, r.res.Killed, r.res.KillReason, r.res.Duration)
	assert.True(t, r.res.Killed)
	assert.Equal(t, "got-term\n", r.res.Stdout, "the stopped command handled its SIGTERM")
	assert.Equal(t, 3, r.res.ExitCode)
	assert.Empty(t, processesWith(token), "processes left behind")
}

// A run's own KillGrace, shorter than the sandbox's, is the time a command
// ignoring SIGTERM gets before its SIGKILL: with the sandbox's 30 s it
// would still run at the test's bound.
func TestBwrapRequestKillGraceShortensTheSandboxs(t *testing.T) {
	sb := newBwrap(t, Config{KillGrace: 30 * time.Second})
	token := fmt.Sprintf("custos-deaf-%d", time.Now().UnixNano())
	script := "# " + token + "\ntrap '' TERM; echo ready; while :; do sleep 0.1; done"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	ready := make(chan struct{})
	out := &signalWriter{match: "ready", hit: ready}
	go func() {
		res, err := sb.Run(ctx, Request{Workspace: t.TempDir(), Argv: bash(script), Timeout: time.Minute,
			KillGrace: 200 * time.Millisecond, Stdout: out})
		assert.NoError(t, err)
		done <- res
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the command never started")
	}
	cancel()
	select {
	case res := <-done:
		assert.True(t, res.Killed)
		assert.Contains(t, res.KillReason, "canceled")
	case <-time.After(15 * time.Second):
		t.Fatal("the command ignoring SIGTERM still ran 15 s after its kill: the run's grace was not used")
	}
	assert.Empty(t, processesWith(token), "processes left behind")
}

// signalWriter closes hit once what was written holds match.
type signalWriter struct {
	match string
	hit   chan struct{}
	seen  strings.Builder
	done  bool
}

func (w *signalWriter) Write(b []byte) (int, error) {
	w.seen.Write(b)
	if !w.done && strings.Contains(w.seen.String(), w.match) {
		w.done = true
		close(w.hit)
	}
	return len(b), nil
}
