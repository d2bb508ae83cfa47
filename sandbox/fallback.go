package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/custos-dev/custos/sandbox/netproxy"
	"github.com/custos-dev/custos/sandbox/sysview"
)

// fallback runs commands on the host with application-level restrictions only:
// scrubbed environment, cwd = workspace, own process group, timeout, rlimits
// (via prlimit when present), and a cleanup of every process it left behind.
// It cannot hide files or the network; every Result says so.
type fallback struct {
	cfg     Config
	prlimit string
	why     string
}

func (f *fallback) Backend() (string, string) {
	return BackendFallback, f.why
}

func (f *fallback) Run(ctx context.Context, req Request) (Result, error) {
	ws, err := checkRequest(req)
	if err != nil {
		return Result{Backend: BackendFallback}, err
	}
	if req.Service {
		// A server would run for the whole job without OS isolation, and
		// no person approves each of its actions: never.
		return Result{Backend: BackendFallback}, fmt.Errorf("sandbox: no OS sandbox (%s): custos does not run servers unconfined", f.why)
	}
	if err := refuseUnconfined(req, f.why); err != nil {
		return Result{Backend: BackendFallback}, err
	}
	home, err := os.MkdirTemp("", "custos-fallback-home-")
	if err != nil {
		return Result{Backend: BackendFallback}, fmt.Errorf("sandbox: fallback home: %w", err)
	}
	defer os.RemoveAll(home)
	tmp := filepath.Join(home, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return Result{Backend: BackendFallback}, fmt.Errorf("sandbox: fallback tmp: %w", err)
	}

	note := FallbackNote
	if len(req.ReadDeny)+len(req.EditDeny) > 0 {
		note += "; Read/Edit deny rules are NOT enforced on the command's own file access"
	}
	proxyAddr := ""
	if len(req.Network.AllowedDomains) > 0 {
		// Without a network namespace the proxy is only advisory: programs that
		// honour HTTP(S)_PROXY go through the allowlist, others are not stopped.
		p, err := netproxy.Start(f.cfg.Logger, f.cfg.Resolver, req.Network, "tcp", "127.0.0.1:0")
		if err != nil {
			return Result{Backend: BackendFallback}, err
		}
		defer p.Close()
		proxyAddr = p.Addr()
		note += "; network allowlist is advisory only (proxy variables set, direct connections not blocked)"
	} else {
		note += "; network access is NOT blocked"
	}

	cookie := make([]byte, 12)
	if _, err := rand.Read(cookie); err != nil {
		return Result{Backend: BackendFallback}, fmt.Errorf("sandbox: cookie: %w", err)
	}
	cookieVal := hex.EncodeToString(cookie)
	env, err := buildEnv(req, sysview.HostPath(), home, tmp, proxyAddr, map[string]string{cookieEnv: cookieVal})
	if err != nil {
		return Result{Backend: BackendFallback}, err
	}
	argv := req.Argv
	if f.prlimit != "" {
		argv = prlimitArgv(f.prlimit, f.cfg.limits(), argv)
	} else {
		note += "; resource limits NOT applied (prlimit not found)"
	}
	path, err := exec.LookPath(argv[0])
	if err != nil && filepath.Base(argv[0]) == argv[0] {
		// exec.LookPath searched the worker's PATH; the command's own PATH is
		// the same (hostPath), so a miss is a real "command not found".
		return Result{Backend: BackendFallback, Note: note, ExitCode: 127, Stderr: fmt.Sprintf("%s: command not found\n", argv[0])}, nil
	}
	if path == "" {
		path = argv[0]
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: ws}
	// An unconfined command may write anywhere; what it leaves in the
	// workspace for the host's git is neutralised all the same.
	guard := f.cfg.guard().Guard(ws, nil)
	res, err := runProcess(ctx, f.cfg, runSpec{cmd: cmd, req: req, afterExit: func() { killByCookie(cookieEnv + "=" + cookieVal) }})
	res.Backend = BackendFallback
	res.Note = note
	guard.Finish(&res.Report)
	return res, err
}

// killByCookie SIGKILLs every process whose environment carries the run's
// cookie, repeating while it finds some (a fork bomb keeps forking while we
// scan). Processes that scrubbed their own environment escape: that is the
// limit of an application-level sandbox, and why bubblewrap is preferred.
func killByCookie(tag string) {
	needle := append([]byte(tag), 0)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return // not Linux: nothing we can scan
		}
		found := 0
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			data, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil {
				continue
			}
			if bytes.HasPrefix(data, needle) || bytes.Contains(data, append([]byte{0}, needle...)) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				found++
			}
		}
		if found == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
