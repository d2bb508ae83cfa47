package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/custos-dev/custos/sandbox/hostguard"
)

// The helper is the current executable re-exec'd under one of these names
// (argv[0]); MaybeRunHelper recognises them. Keying on argv[0] rather than an
// environment variable means the command itself can never trigger it by
// setting a variable, and nothing leaks into the command's environment.
const (
	helperInitName   = "custos-sandbox-init"
	helperBridgeName = "custos-sandbox-bridge"
	// pid1Marker, as the first argument, makes the binary the sandbox's
	// PID 1 when there is no mount step (helperPid1). The helper binary is
	// bound at one path, so the marker, not argv[0], says which job.
	pid1Marker = "custos-sandbox-pid1"
)

// helperWired records that this process' main() called MaybeRunHelper, so
// re-executing our own binary as the in-sandbox bridge is safe. Without it a
// network-allowlist request fails closed instead of re-running (say) the whole
// worker inside the sandbox.
var helperWired atomic.Bool

// MaybeRunHelper must be the first call in main() of every binary that runs
// sandboxed commands (worker, starter) and in TestMain of tests that do: when
// the process was started as the sandbox's in-namespace helper it does that
// job and exits; otherwise it returns immediately.
func MaybeRunHelper() {
	if len(os.Args) > 1 && os.Args[1] == mountStepMarker {
		os.Exit(mountStepWithoutConstructor(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == pid1Marker && os.Getpid() == 1 {
		os.Exit(helperPid1(os.Args[2:]))
	}
	switch filepath.Base(os.Args[0]) {
	case helperInitName:
		os.Exit(helperInit(os.Args[1:]))
	case helperBridgeName:
		os.Exit(helperBridge(os.Args[1:]))
	case hostguard.HelperHostCheckName:
		os.Exit(hostguard.RunHelper(os.Stdin, os.Stdout))
	}
	helperWired.Store(true)
	hostguard.WireHelper()
}

// helperExecutable is the binary bind-mounted into the sandbox as the helper.
func helperExecutable() (string, error) {
	if !helperWired.Load() {
		return "", errors.New("sandbox: network allowlist needs the in-sandbox bridge, but this binary's main() does not call sandbox.MaybeRunHelper()")
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("sandbox: own executable: %w", err)
	}
	exe, err = filepath.EvalSymlinks(exe)
	if err != nil {
		return "", fmt.Errorf("sandbox: own executable: %w", err)
	}
	return exe, nil
}

// helperInit runs inside the sandbox: it opens the loopback listener the
// proxy variables point at, starts the bridge (a copy of itself) on that
// listener, then execs the command. Listening before exec means the command
// can never race the bridge's startup.
func helperInit(args []string) int {
	fs := flag.NewFlagSet(helperInitName, flag.ContinueOnError)
	listen := fs.String("listen", "", "loopback address for the bridge")
	sock := fs.String("socket", "", "unix socket of the host proxy")
	if err := fs.Parse(args); err != nil {
		return 125
	}
	argv := fs.Args()
	if len(argv) == 0 || *listen == "" || *sock == "" {
		fmt.Fprintln(os.Stderr, "custos-sandbox-init: usage: --listen ADDR --socket PATH -- CMD...")
		return 125
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "custos-sandbox-init: listen %s: %v\n", *listen, err)
		return 125
	}
	lf, err := ln.(*net.TCPListener).File()
	if err != nil {
		fmt.Fprintf(os.Stderr, "custos-sandbox-init: listener fd: %v\n", err)
		return 125
	}
	ln.Close()
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "custos-sandbox-init: %v\n", err)
		return 125
	}
	bridge := &exec.Cmd{
		Path:       self,
		Args:       []string{helperBridgeName, "--socket", *sock},
		ExtraFiles: []*os.File{lf},
		Stderr:     os.Stderr,
		// The bridge outlives our exec; it dies with the sandbox's PID namespace.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := bridge.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "custos-sandbox-init: start bridge: %v\n", err)
		return 125
	}
	lf.Close()
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: command not found\n", argv[0])
		return 127
	}
	err = syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "custos-sandbox-init: exec %s: %v\n", argv[0], err)
	return 126
}

// helperBridge forwards each loopback connection to the host proxy's unix
// socket; policy lives entirely on the host side.
func helperBridge(args []string) int {
	fs := flag.NewFlagSet(helperBridgeName, flag.ContinueOnError)
	sock := fs.String("socket", "", "unix socket of the host proxy")
	if err := fs.Parse(args); err != nil || *sock == "" {
		return 125
	}
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "custos-sandbox-bridge: %v\n", err)
		return 125
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return 0
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("unix", *sock)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{}, 2)
			go func() {
				_, _ = io.Copy(up, c)
				_ = up.(*net.UnixConn).CloseWrite()
				done <- struct{}{}
			}()
			go func() {
				_, _ = io.Copy(c, up)
				_ = c.(*net.TCPConn).CloseWrite()
				done <- struct{}{}
			}()
			<-done
			<-done
		}()
	}
}
