package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/masks"
	"github.com/custos-dev/custos/sandbox/mount"
)

// The mount step. bubblewrap 0.8 rereads the whole mount table after every
// bind it makes (to apply read-only to what lies below), so its set-up
// grows with the square of the mounts: the deny rules' masks and pins and
// the protected paths cost it 0.3 to 0.6 ms each, 60 ms for a hundred
// rules. The mounts whose sources lie inside the sandbox (the workspace's
// paths bound onto themselves, and the empty file and directories masks
// show) are made instead by a step of custos' own that runs in the sandbox
// before the command, with the new mount API (open_tree, mount_setattr,
// move_mount: known flags, no table to read), tens of microseconds each:
//
//	bwrap --cap-add CAP_SYS_ADMIN --cap-add CAP_SETPCAP ... -- \
//	  /proc/self/fd/EXE custos-sandbox-mounts PLAN STATUS SECCOMP EXE -- CMD
//
// The step is this binary, run by its C constructor (mountinit_cgo.go). It
// reads the plan (the mounts, the command's rlimits and environment:
// bubblewrap itself gets no environment, so nothing reaches the step's
// dynamic loader), enters a mount namespace of its own (everything
// bubblewrap mounted is locked in it: no process there can unmount or
// uncover it), makes the mounts, makes the root read-only, sets the
// rlimits, drops every capability (ambient, bounding, effective, permitted,
// inheritable, then checks), loads the seccomp filter, closes every
// descriptor it inherited, and, as the sandbox's PID 1, forks the command
// and reaps until it ends (cm_init). Anything that fails before the exec is written to the status
// pipe and the command does not run. The worker probes the step once
// (probeMountStep); without cgo, on a kernel without the new mount API
// (before 5.12), or when the probe fails, bubblewrap makes these mounts as
// before.
const mountStepMarker = "custos-sandbox-mounts"

// mountStep is the probed mount step: the binary the sandbox execs through
// /proc/self/fd.
type mountStep struct {
	exe *os.File
}

// stepProbe is what probing the step found: the step, why it cannot
// mount workspaces as overlays here (nil: it can), and how it was probed.
type stepProbe struct {
	step       *mountStep
	overlayErr error
	note       string
}

// Plan records: a letter, a path (or NAME=VALUE), NUL.
const (
	stepOverlay  = 'O' // the workspace's overlay at the path (first, when the run has one)
	stepCache    = 'C' // a cache's overlay at the path, its layers at sbCacheOverlay
	stepBind     = 'B' // bind onto itself, read-write (pins)
	stepReadOnly = 'R' // bind onto itself, read-only
	stepHideFile = 'F' // an empty mode-000 file over it
	stepHideDir  = 'D' // an empty mode-000 directory over it
	stepEmpty    = 'E' // an empty mode-0555 directory over it (placeholders)
	stepEnv      = 'V' // NAME=VALUE of the command's environment
	stepLimit    = 'L' // "NAME SOFT HARD": an rlimit (core, cpu, as, fsize, nproc)
	// stepEnd, with no path, is the plan's last record. The host writes
	// the plan while bubblewrap starts (see run), and a plan that failed
	// is never written; the step refuses one without its end, so a plan
	// cut short can never pass for a whole one with fewer mounts.
	stepEnd = 'Z'
)

// stepMounts are the mounts the step makes for a profile, in the order
// bwrapArgs would have made them: the workspace's overlay when the run
// has one (sandbox/hostguard), the masks' pins, the protected paths,
// the masks (then it makes the root read-only); then the command's
// environment and limits, and the end.
func stepMounts(p bwrapProfile) ([]byte, error) {
	var b strings.Builder
	rec := func(op byte, s string) error {
		if strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("sandbox: mount step: NUL in %q", s)
		}
		b.WriteByte(op)
		b.WriteString(s)
		b.WriteByte(0)
		return nil
	}
	var err error
	if p.Overlay != "" {
		err = rec(stepOverlay, p.Workspace)
	}
	if p.CacheOverlay != nil {
		err = errors.Join(err, rec(stepCache, p.CacheOverlay.At))
	}
	for _, d := range p.Masks.Pins {
		err = errors.Join(err, rec(stepBind, d))
	}
	for _, m := range p.Protected {
		switch {
		case m.Kind == mount.Bind && m.Src == m.Dst:
			err = errors.Join(err, rec(stepBind, m.Dst))
		case m.Kind == mount.ROBind && m.Src == m.Dst:
			err = errors.Join(err, rec(stepReadOnly, m.Dst))
		case m.Kind == mount.Empty:
			err = errors.Join(err, rec(stepEmpty, m.Dst))
		default:
			return nil, fmt.Errorf("sandbox: mount step: protected mount %+v has its source outside the sandbox", m)
		}
	}
	for _, m := range p.Masks.Masks {
		op := byte(stepReadOnly)
		switch {
		case m.Missing:
			op = stepEmpty
		case m.Kind == masks.Hide && m.Dir:
			op = stepHideDir
		case m.Kind == masks.Hide:
			op = stepHideFile
		}
		err = errors.Join(err, rec(op, m.Path))
	}
	if p.ReadOnlyWorkspace {
		// Last of the mounts, recursive: the masks and protected paths
		// below it become read-only with it.
		err = errors.Join(err, rec(stepReadOnly, p.Workspace))
	}
	for _, kv := range p.Env {
		err = errors.Join(err, rec(stepEnv, kv))
	}
	if l := p.Limits; l != nil {
		// As prlimitArgv sets them: no core files, the CPU's soft limit a
		// second below the hard one (SIGXCPU first, reported as the cpu
		// limit), the others hard.
		err = errors.Join(err, rec(stepLimit, "core 0 0"))
		if l.cpu > 0 {
			err = errors.Join(err, rec(stepLimit, fmt.Sprintf("cpu %d %d", l.cpu, l.cpu+1)))
		}
		for _, r := range []struct {
			name string
			v    int64
		}{{"as", l.as}, {"fsize", l.fsize}, {"nproc", l.nproc}} {
			if r.v > 0 {
				err = errors.Join(err, rec(stepLimit, fmt.Sprintf("%s %d %d", r.name, r.v, r.v)))
			}
		}
	}
	b.WriteByte(stepEnd)
	b.WriteByte(0)
	return []byte(b.String()), err
}

// stepCommand is the command bubblewrap runs when the step makes the
// mounts: the step, then the command.
func stepCommand(seccomp bool, command []string) []string {
	sec := "-1"
	if seccomp {
		sec = fmt.Sprint(fdSeccomp)
	}
	exe := fmt.Sprint(fdStepExe)
	return append([]string{"/proc/self/fd/" + exe, mountStepMarker,
		fmt.Sprint(fdStepPlan), fmt.Sprint(fdStepStatus), sec, exe, "--"}, command...)
}

// stepFailed reads what the step wrote on its status pipe once the run is
// over: nothing when it exec'd the command (the pipe closes on exec).
func stepFailed(r *os.File) error {
	if r == nil {
		return nil
	}
	msg, _ := io.ReadAll(io.LimitReader(r, 4096))
	if len(msg) == 0 {
		return nil
	}
	return fmt.Errorf("sandbox: the sandbox's mount step failed, the command did not run: %s", strings.TrimSpace(string(msg)))
}

// openMountStep opens this binary for the step, when it carries it.
func openMountStep() (*mountStep, error) {
	if !mountInitBuilt {
		return nil, errors.New("built without cgo")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("own executable: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return nil, fmt.Errorf("own executable: %w", err)
	}
	f, err := os.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("own executable: %w", err)
	}
	return &mountStep{exe: f}, nil
}

// mountStepWithoutConstructor is what runs when the marker reaches Go's
// main: the C constructor did not run (a C library that does not pass
// argv to constructors). It fails the step, so the probe turns it off.
func mountStepWithoutConstructor(args []string) int {
	if len(args) > 1 {
		var fd int
		if _, err := fmt.Sscan(args[1], &fd); err == nil && fd > 2 {
			f := os.NewFile(uintptr(fd), "status")
			fmt.Fprint(f, "the mount step's C constructor did not run")
			f.Close()
		}
	}
	fmt.Fprintln(os.Stderr, mountStepMarker+": the C constructor did not run")
	return 125
}

// stepProbeScript checks, inside a sandbox set up by the step, what the
// step is for: each kind of mount holds, the workspace stays writable, the
// root does not, and the command has no capability left. Shell builtins
// only, so the probe costs one exec.
const stepProbeScript = `fail() { echo "mount step probe: $1"; exit 1; }
[ -r hidden ] && fail "a Read-denied file is readable"
[ -e secret/x ] && fail "a Read-denied directory is listable"
{ echo x > sub/ro; } 2>/dev/null && fail "an Edit-denied file is writable"
{ echo x > .env/x; } 2>/dev/null && fail "a placeholder is writable"
{ echo x > sub/new; } 2>/dev/null || fail "the workspace is not writable"
{ echo x > /custos-probe; } 2>/dev/null && fail "the root is writable"
caps=0
while read -r k v; do
  case $k in CapEff:|CapPrm:|CapBnd:|CapAmb:) caps=$((caps+1)); [ "$v" = 0000000000000000 ] || fail "capabilities are left ($k $v)";; esac
done < /proc/self/status
[ "$caps" = 4 ] || fail "no capability sets in /proc/self/status"
echo "mount step ok"`

// probeMountStep returns the step when it works here: this binary carries
// it, and a probe run through it (one mount of each kind) shows every
// mount holding. It is also bubblewrap's probe: when it passes, bubblewrap
// works too. Otherwise b keeps bubblewrap's mounts.
func probeMountStep(ctx context.Context, b *bwrapSandbox) (stepProbe, error) {
	step, err := openMountStep()
	if err != nil {
		return stepProbe{}, err
	}
	ws, err := os.MkdirTemp("", "custos-mount-step-probe-")
	if err == nil {
		defer os.RemoveAll(ws)
		ws, err = filepath.EvalSymlinks(ws)
	}
	for _, d := range []string{"secret", "sub"} {
		err = errors.Join(err, os.MkdirAll(filepath.Join(ws, d), 0o755))
	}
	for _, f := range []string{"hidden", "secret/x", "sub/ro"} {
		err = errors.Join(err, os.WriteFile(filepath.Join(ws, f), []byte("x"), 0o644))
	}
	if err != nil {
		step.exe.Close()
		return stepProbe{}, fmt.Errorf("probe workspace: %w", err)
	}
	b.step = step
	defer func() { b.step, b.overlay = nil, false }()
	probe := func(overlay bool) error {
		b.overlay = overlay
		res, err := probeRun(ctx, b, Request{Workspace: ws, Argv: []string{"/bin/sh", "-c", stepProbeScript}, Timeout: 10 * time.Second, bare: true,
			ReadDeny: []string{"hidden", "secret/**", ".env"}, EditDeny: []string{"sub/ro"}, probeOverlay: overlay})
		if err == nil && (res.ExitCode != 0 || !strings.Contains(res.Stdout, "mount step ok")) {
			err = fmt.Errorf("probe exited %d: %s", res.ExitCode, hostfs.TrimForLog(strings.TrimSpace(res.Stdout+" "+res.Stderr)))
		}
		if _, serr := os.Lstat(filepath.Join(ws, "sub", "new")); err == nil && overlay && serr == nil {
			// The probe's write reached the host: no overlay was there.
			err = errors.New("the probe's write reached the workspace through the overlay")
		}
		return err
	}
	// With the overlay first: a run whose overlay cannot be mounted does
	// not run at all, so it is on only when it works here.
	overlayErr := probe(true)
	if overlayErr != nil {
		if err := probe(false); err != nil {
			step.exe.Close()
			return stepProbe{}, err
		}
	}
	return stepProbe{step: step, overlayErr: overlayErr}, nil
}
