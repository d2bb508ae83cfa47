package lsp

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// Process is a running language server: its stdin and stdout, how to wait
// for its end and how to kill it. A Starter makes one.
type Process struct {
	Stdin  io.WriteCloser
	Stdout io.Reader
	// Wait returns when the server has exited, with why; Kill ends it at
	// once. Both may be called more than once.
	Wait func() error
	Kill func()
}

// Spec is a language server to start: its command, the workspace it
// answers about, and the patterns of the Read deny rules, which a
// sandboxed server is not shown.
type Spec struct {
	Argv      []string
	Workspace string
	ReadDeny  []string
}

// Starter starts a language server. The pool calls it on first use and
// after a crash; the server must outlive ctx's request (ctx bounds only
// the start).
type Starter func(ctx context.Context, s Spec) (*Process, error)

// HostStarter runs the server directly on the host, in workspace, with the
// worker's environment, except that Go servers may not download modules
// (GOPROXY=off): a language server answers about the workspace as it is.
// It is the Starter of the package's own tests, which drive gopls as
// directly as they can; the worker's runs servers in its sandbox. The
// deny patterns are the caller's to apply to what the server answers.
func HostStarter(_ context.Context, s Spec) (*Process, error) {
	argv, workspace := s.Argv, s.Workspace
	if len(argv) == 0 {
		return nil, fmt.Errorf("start language server: empty command")
	}
	// Not exec.CommandContext: the server lives on after the request
	// that started it.
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = workspace
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly")
	cmd.Stderr = io.Discard
	// Its own process group, so Kill reaches what the server started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	// An os.Pipe, not StdoutPipe: Wait closes StdoutPipe's reader, which
	// would race the client still reading the server's last words.
	stdout, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	cmd.Stdout = pw
	err = cmd.Start()
	_ = pw.Close()
	if err != nil {
		_ = stdout.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	var once sync.Once
	var werr error
	done := make(chan struct{})
	go func() { werr = cmd.Wait(); close(done) }()
	wait := func() error { <-done; return werr }
	return &Process{Stdin: stdin, Stdout: stdout, Wait: wait, Kill: func() {
		once.Do(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	}}, nil
}
