package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// capture keeps the first max bytes of one output stream, forwards everything
// it reads (up to the kill threshold) to an optional live writer, and reports a
// flood once the stream passed killAt bytes.
type capture struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	max       int
	total     int64
	truncated bool
	live      io.Writer
	killAt    int64
	flood     func()
}

func (c *capture) readFrom(r io.Reader) {
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			c.mu.Lock()
			c.total += int64(n)
			data := chunk[:n]
			if room := c.max - c.buf.Len(); room > 0 {
				if len(data) > room {
					c.buf.Write(data[:room])
					c.truncated = true
				} else {
					c.buf.Write(data)
				}
			} else {
				c.truncated = true
			}
			over := c.total > c.killAt
			c.mu.Unlock()
			if c.live != nil {
				// A failing live writer (client went away) must not stop the
				// capture, so its error is ignored.
				_, _ = c.live.Write(data)
			}
			if over {
				// Stop reading: the writer blocks or gets EPIPE once we close
				// the pipe, and the flood callback kills the command.
				c.flood()
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (c *capture) result() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String(), c.truncated
}

// limits are the rlimits applied to one command.
type limits struct {
	cpu, as, fsize, nproc int64
}

func (c Config) limits() limits {
	return limits{cpu: c.CPUSeconds, as: c.MemoryBytes, fsize: c.FileSizeBytes, nproc: c.NProc}
}

// limitsFor are the limits of req: a service (a language server lives for
// the whole job, and gopls maps gigabytes) has no CPU-time or address-space
// limit; its cgroup's limits and the others hold.
func (c Config) limitsFor(req Request) limits {
	l := c.limits()
	if req.Service {
		l.cpu, l.as = 0, 0
	}
	return l
}

// prlimitArgv wraps argv in util-linux prlimit, which sets the limits on itself
// and then execs the command. We use prlimit rather than setrlimit in the
// worker because rlimits are per process on Linux (setting them in a locked OS
// thread would limit the whole worker), and rather than a re-exec of our own
// binary because prlimit works whatever main() the caller has.
func prlimitArgv(prlimit string, l limits, argv []string) []string {
	out := []string{prlimit, "--core=0"}
	add := func(name string, v int64) {
		if v > 0 {
			out = append(out, fmt.Sprintf("--%s=%d", name, v))
		}
	}
	if l.cpu > 0 {
		// soft < hard so the command first gets SIGXCPU, which we can report
		// as "cpu limit"; the hard limit (SIGKILL) is the backstop.
		out = append(out, fmt.Sprintf("--cpu=%d:%d", l.cpu, l.cpu+1))
	}
	add("as", l.as)
	add("fsize", l.fsize)
	add("nproc", l.nproc)
	out = append(out, "--")
	return append(out, argv...)
}

func (c Config) timeout(req Request) time.Duration {
	t := req.Timeout
	if t <= 0 {
		t = c.DefaultTimeout
	}
	if t > c.MaxTimeout {
		t = c.MaxTimeout
	}
	return t
}

// killGrace is the time between SIGTERM and SIGKILL for req: its own
// KillGrace when shorter than the sandbox's.
func (c Config) killGrace(req Request) time.Duration {
	if req.KillGrace > 0 && req.KillGrace < c.KillGrace {
		return req.KillGrace
	}
	return c.KillGrace
}

// runSpec is what a backend hands to runProcess.
type runSpec struct {
	cmd *exec.Cmd
	req Request
	// start, when set, replaces cmd.Start (after runProcess has set up
	// cmd: pipes, process group, parent-death signal).
	start func() error
	// afterStart runs right after Start, successful or not, to close the
	// parent's copies of fds handed to the child.
	afterStart func()
	// signal, when set, replaces "signal the process group" in the kill
	// sequence (SIGTERM, grace, SIGKILL). After SIGKILL the caller waits for
	// the main process, so a backend must make that exit mean "all gone".
	signal func(sig syscall.Signal)
	// afterExit runs once the main process is gone, to kill what it left behind.
	afterExit func()
}

// runProcess starts spec.cmd in its own process group, captures its output,
// enforces timeout/context/output-flood by killing the whole group (SIGTERM,
// grace, SIGKILL), and reports what happened.
func runProcess(ctx context.Context, cfg Config, spec runSpec) (Result, error) {
	cmd := spec.cmd
	pipes, err := openOutputPipes()
	if err != nil {
		return Result{}, err
	}
	defer pipes.close()
	cmd.Stdout, cmd.Stderr = pipes.outW, pipes.errW
	if spec.req.StdoutFile != nil {
		cmd.Stdout = spec.req.StdoutFile // a service's answers, straight to its reader
	}
	cmd.Stdin = nil // /dev/null: commands must not wait for a terminal
	if spec.req.Stdin != nil {
		cmd.Stdin = spec.req.Stdin // a service's requests
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Own process group so a kill reaches every process of the command; and if
	// the worker dies, the child (bwrap, which takes the sandbox with it) dies too.
	cmd.SysProcAttr.Setpgid = true
	setParentDeathSignal(cmd.SysProcAttr)
	out := newOutputs(cfg, spec.req)

	start := time.Now()
	if spec.start != nil {
		err = spec.start()
	} else {
		err = cmd.Start()
	}
	pipes.closeWriters()
	if spec.afterStart != nil {
		spec.afterStart()
	}
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: start %s: %w", cmd.Path, err)
	}
	readers := out.read(pipes)
	res, werr := supervise(ctx, cfg, spec, out.flood)
	res.Duration = time.Since(start)

	// Whatever the main process left in its group (background jobs) goes now.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if spec.afterExit != nil {
		spec.afterExit()
	}
	drain(readers, pipes)
	res.Stdout, res.Truncated = out.stdout.result()
	var t2 bool
	res.Stderr, t2 = out.stderr.result()
	res.Truncated = res.Truncated || t2
	return exitResult(res, werr)
}

// outputPipes are the command's stdout and stderr pipes. closeWriters closes
// the worker's copies of the write ends (after Start, so the readers see EOF
// once the command's are gone too), closeReaders the read ends, close
// whatever is still open; each file is closed once. Only the goroutine of
// runProcess closes them.
type outputPipes struct {
	outR, outW, errR, errW *os.File
}

// openOutputPipes opens both pipes, or none.
func openOutputPipes() (*outputPipes, error) {
	p := &outputPipes{}
	var err error
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("sandbox: stdout pipe: %w", err)
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.close()
		return nil, fmt.Errorf("sandbox: stderr pipe: %w", err)
	}
	return p, nil
}

func closeOnce(fs ...**os.File) {
	for _, f := range fs {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}

func (p *outputPipes) closeWriters() { closeOnce(&p.outW, &p.errW) }
func (p *outputPipes) closeReaders() { closeOnce(&p.outR, &p.errR) }
func (p *outputPipes) close()        { closeOnce(&p.outW, &p.errW, &p.outR, &p.errR) }

// outputs capture the command's stdout and stderr; flood is closed when
// either passes the kill threshold.
type outputs struct {
	stdout, stderr *capture
	flood          chan struct{}
}

func newOutputs(cfg Config, req Request) *outputs {
	maxOut := req.MaxOutput
	if maxOut <= 0 {
		maxOut = cfg.MaxOutput
	}
	killAt := cfg.OutputKillBytes
	if killAt < int64(maxOut) {
		killAt = int64(maxOut)
	}
	if req.Service {
		// A server's output is its answers, as many as it is asked for.
		killAt = math.MaxInt64
	}
	o := &outputs{flood: make(chan struct{})}
	var floodOnce sync.Once
	flood := func() { floodOnce.Do(func() { close(o.flood) }) }
	o.stdout = &capture{max: maxOut, live: req.Stdout, killAt: killAt, flood: flood}
	o.stderr = &capture{max: maxOut, live: req.Stderr, killAt: killAt, flood: flood}
	return o
}

// read starts reading both pipes' read ends; the WaitGroup is done when
// both readers are.
func (o *outputs) read(p *outputPipes) *sync.WaitGroup {
	var readers sync.WaitGroup
	readers.Add(2)
	go func(r *os.File) { defer readers.Done(); o.stdout.readFrom(r) }(p.outR)
	go func(r *os.File) { defer readers.Done(); o.stderr.readFrom(r) }(p.errR)
	return &readers
}

// supervise waits for the started command to exit, or kills it on timeout,
// output flood or cancellation: SIGTERM, the grace period, SIGKILL (through
// spec.signal, or to the process group), and waits for it then. It returns
// Wait's error, and in res whether and why the command was killed.
func supervise(ctx context.Context, cfg Config, spec runSpec, flood <-chan struct{}) (res Result, werr error) {
	cmd := spec.cmd
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()

	pgid := cmd.Process.Pid
	timer := time.NewTimer(cfg.timeout(spec.req))
	defer timer.Stop()
	expired := timer.C
	if spec.req.Service {
		expired = nil // a server lives as long as its context
	}

	signal := spec.signal
	if signal == nil {
		signal = func(sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }
	}
	kill := func(reason string) {
		res.Killed, res.KillReason = true, reason
		signal(syscall.SIGTERM)
		// A stopped process (SIGSTOP, a debugger, job control) keeps its
		// SIGTERM pending and would sleep through the grace to the
		// SIGKILL: SIGCONT lets it handle the SIGTERM now, as systemd and
		// a shell's kill do. A running process ignores SIGCONT.
		signal(syscall.SIGCONT)
		select {
		case werr = <-waitErr:
		case <-time.After(cfg.killGrace(spec.req)):
			signal(syscall.SIGKILL)
			werr = <-waitErr
		}
	}
	select {
	case werr = <-waitErr:
	case <-expired:
		kill("timeout")
	case <-flood:
		kill("output limit")
	case <-ctx.Done():
		kill("canceled: " + context.Cause(ctx).Error())
	}
	return res, werr
}

// drain waits for the output readers, which end when every writer is gone;
// a writer that escaped the kill must not hang us, so the read ends are
// closed after a short wait.
func drain(readers *sync.WaitGroup, pipes *outputPipes) {
	done := make(chan struct{})
	go func() { readers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		pipes.closeReaders()
		<-done
	}
	pipes.closeReaders()
}

// exitResult records how the command ended, from Wait's error: its exit
// code (128+signal when a signal ended it), and a kill by its own rlimits.
func exitResult(res Result, werr error) (Result, error) {
	var ee *exec.ExitError
	switch {
	case werr == nil:
		res.ExitCode = 0
	case errors.As(werr, &ee):
		ws, _ := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			res.ExitCode = 128 + int(ws.Signal())
		} else {
			res.ExitCode = ws.ExitStatus()
		}
	default:
		return res, fmt.Errorf("sandbox: wait: %w", werr)
	}
	if !res.Killed {
		// A command killed by its own rlimit shows up as 128+signal (bwrap
		// reports the inner signal this way too).
		switch res.ExitCode {
		case 128 + int(syscall.SIGXCPU):
			res.Killed, res.KillReason = true, "cpu limit"
		case 128 + int(syscall.SIGXFSZ):
			res.Killed, res.KillReason = true, "file size limit"
		}
	}
	return res, nil
}
