package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Process is a long-lived server running in the sandbox (an MCP server, a
// language server), spoken to over its standard input and output.
type Process struct {
	// Stdin is the server's standard input; closing it tells most servers
	// to exit.
	Stdin io.WriteCloser
	// Stdout is what the server writes, as it writes it.
	Stdout io.ReadCloser

	cancel context.CancelFunc
	done   chan struct{}
	stderr *tailBuffer
	res    Result
	err    error
}

// Start runs req as a service (req.Service is set for it) in sb and returns
// at once: the server lives until ctx ends, Stop is called or it exits.
// Its standard error is kept, its last 8 KiB, for Stderr.
func Start(ctx context.Context, sb Sandbox, req Request) (*Process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: a server's stdin: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inR.Close()
		_ = inW.Close()
		return nil, fmt.Errorf("sandbox: a server's stdout: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Process{Stdin: inW, cancel: cancel, done: make(chan struct{}), stderr: &tailBuffer{max: 8 << 10}}
	p.Stdout = &exitReader{f: outR, p: p}
	req.Service, req.Stdin, req.StdoutFile, req.Stderr = true, inR, outW, p.stderr
	go func() {
		defer close(p.done)
		p.res, p.err = sb.Run(ctx, req)
		// The server is gone: its reader sees the end once these go.
		_ = inR.Close()
		_ = inW.Close()
		_ = outW.Close()
	}()
	return p, nil
}

// exitReader is a server's standard output; at its end it says how the
// server ended (ErrServiceExited, or the run's error).
type exitReader struct {
	f *os.File
	p *Process
}

func (r *exitReader) Read(b []byte) (int, error) {
	n, err := r.f.Read(b)
	if err == io.EOF {
		<-r.p.done
		if r.p.err != nil {
			return n, r.p.err
		}
		return n, fmt.Errorf("%w (%s)", ErrServiceExited, describeExit(r.p.res))
	}
	return n, err
}

func (r *exitReader) Close() error { return r.f.Close() }

// Stop kills the server with its process tree and waits for it.
func (p *Process) Stop() {
	p.cancel()
	<-p.done
}

// Done is closed once the server has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the server's exit and returns how it ended.
func (p *Process) Wait() (Result, error) {
	<-p.done
	return p.res, p.err
}

// Stderr is the end of what the server wrote to its standard error.
func (p *Process) Stderr() string { return p.stderr.String() }

// describeExit says how a server's run ended.
func describeExit(res Result) string {
	switch {
	case res.Killed:
		return "killed: " + res.KillReason
	default:
		return fmt.Sprintf("exit code %d", res.ExitCode)
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// ErrServiceExited is wrapped by what a server's stream returns once it has
// exited.
var ErrServiceExited = errors.New("sandbox: the server exited")
