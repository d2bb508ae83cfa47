package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/hostguard"
	"github.com/custos-dev/custos/sandbox/protect"
	"github.com/custos-dev/custos/sandbox/provision"
	"github.com/custos-dev/custos/sandbox/sysview"
)

// Paths inside the sandbox.
const (
	sbTmp       = sysview.Tmp
	sbHome      = sysview.Home
	sbRunDir    = "/run/custos"
	sbProxySock = "/run/custos/proxy.sock"
	sbHelper    = "/run/custos/" + helperInitName
	// sbOverlay holds the run's overlay layers for the mount step, which
	// covers it before the command runs (mountinit_cgo.go names it too).
	sbOverlay = "/.custos-overlay"
	// sbCacheOverlay, likewise, holds a server's cache overlay's layers.
	sbCacheOverlay = "/.custos-cache-overlay"
	// sbProxyAddr is the in-sandbox bridge; the sandbox has its own network
	// namespace, so a fixed port cannot collide with anything.
	sbProxyAddr = "127.0.0.1:3128"
)

type bwrapSandbox struct {
	cfg     Config
	bwrap   string
	prlimit string
	// pids is set when the worker runs as root (see cgroup.go).
	pids *pidsCgroup
	why  string
	// prov provisions the workspaces' toolchains (sandbox/provision).
	prov *provision.Provisioner
	// noHostGuard turns the post-command scan off: only for the tests'
	// controls, which show what it stops.
	noHostGuard bool
	// listings speeds up the walks of the post-command scan (sandbox/hostguard).
	listings *hostfs.HostListings
	// step, when set, is the mount step that makes the workspace's own
	// mounts inside the sandbox (mountinit.go); overlay, that it also
	// mounts guarded runs' workspaces as overlays (sandbox/hostguard).
	step    *mountStep
	overlay bool
	// overlays keeps finished runs' overlay directories for the next.
	overlays *hostguard.OverlayPool
}

func (b *bwrapSandbox) Backend() (string, string) {
	return BackendBwrap, b.why
}

func (b *bwrapSandbox) Run(ctx context.Context, req Request) (Result, error) {
	res, err := b.run(ctx, req)
	res.Backend = BackendBwrap
	if err != nil && b.cfg.ProbeCache != "" && ctx.Err() == nil {
		// Perhaps the sandbox no longer works as an earlier probe found:
		// the next process probes again.
		_ = os.Remove(b.cfg.ProbeCache)
	}
	return res, err
}

// run is Run without the backend name, shared with the probe.
//
// With the mount step, the workspace's own mounts are planned only once
// bubblewrap has started (planLate): the host-config snapshot, the masks,
// the protected paths and their placeholders are made while bubblewrap
// builds the sandbox, and the step reads its plan before it mounts
// anything, so none of it waits in front of bubblewrap, and the command
// can still run only once all of it is done. A plan that fails is never
// written: the step, which needs the plan's end, fails and the command
// does not run.
func (b *bwrapSandbox) run(ctx context.Context, req Request) (res Result, err error) {
	ws, err := checkRequest(req)
	if err != nil {
		return Result{}, err
	}
	guarded := b.guarded(req)
	var guard *hostguard.Guard // the host-config check, once its snapshot is taken
	// Registered before undo, so it runs after it (placeholders gone),
	// whatever the run returns: also after a kill, a timeout or an error
	// once the command may have run.
	overlay := "" // the run's overlay directory, when it has one
	defer func() {
		switch {
		case guard != nil:
			finishGuard(guard, req, &res.Report)
		case overlay != "" && req.ServiceOverlay == "": // a service's own is its caller's
			_ = hostfs.RemoveAllWritable(overlay) // unguarded (the probe's), or the command never ran
		}
	}()
	var undo cleanups
	defer undo.run()
	late := b.step != nil
	p, pool, dirs, guard, err := b.planBefore(ws, req, guarded, &undo) // guard: the one above
	if err != nil {
		return Result{}, err
	}
	overlay = p.Overlay
	files, err := openRunFiles(p, b.step)
	if err != nil {
		return Result{}, err
	}
	undo.add(files.close)
	if !late {
		if err := files.feedPlan(p); err != nil {
			return Result{}, err
		}
	}
	cmd, cg, start, err := b.command(bwrapArgs(p), p.bwrapEnv(), files.child(), &undo)
	if err != nil {
		return Result{}, err
	}
	var lateErr error
	afterStart := func() {
		files.closeChild()
		if !late || cmd.Process == nil {
			return
		}
		if guarded {
			guard = b.cfg.guard().GuardWith(ws, b.listings, dirs, overlay, b.overlays)
		}
		if lateErr = b.planLate(ws, req, &p, pool, &undo, dirs); lateErr == nil {
			lateErr = files.feedPlan(p)
		}
		if lateErr != nil {
			files.dropPlan()
		}
	}
	status := watchStatus(files.statusR, cg)
	res, err = runProcess(ctx, b.cfg, runSpec{cmd: cmd, req: req, start: start,
		afterStart: afterStart,
		signal:     func(sig syscall.Signal) { signalSandbox(int(status.initPID.Load()), cmd.Process.Pid, sig) },
	})
	if cmd.Process == nil {
		return res, err // never started: nothing to judge or reap
	}
	res.CacheDir = p.CacheDir
	// verdict waits for the status and reaps what is left of the sandbox,
	// however the run ended.
	vres, verr := status.verdict(res, cg)
	switch {
	case lateErr != nil:
		return Result{}, lateErr // the step had no plan: the command did not run
	case err != nil:
		return res, err
	}
	if serr := stepFailed(files.stepR); serr != nil {
		return Result{}, serr
	}
	return vres, verr
}

// guarded says whether req's run is checked by the host guard when it
// ends: not a read-only one (nothing to check), nor a service on an
// overlay of its own, checked call by call (WatchServiceOverlay).
func (b *bwrapSandbox) guarded(req Request) bool {
	return !req.bare && !b.noHostGuard && !req.ReadOnlyWorkspace && req.ServiceOverlay == ""
}

// finishGuard is the host guard's check after the command, its overlay
// applied once the request's BeforeMerge (the job's checkpoint) has seen it.
func finishGuard(g *hostguard.Guard, req Request, rep *hostguard.Report) {
	g.OnMerge(req.BeforeMerge)
	g.Finish(rep)
}

// planBefore is the planning of run before bubblewrap starts. With the
// mount step it is planStart and the run's overlay: what bubblewrap's
// arguments need, dirs the workspace's listings (kept between commands)
// for the rest, which run does once bubblewrap has started. Without it,
// it is all of it, the host-config snapshot (guard) first.
func (b *bwrapSandbox) planBefore(ws string, req Request, guarded bool, undo *cleanups) (p bwrapProfile, pool *protect.DirPool, dirs *hostfs.DirListings, guard *hostguard.Guard, err error) {
	if req.ServiceOverlay != "" {
		if err := b.serviceOverlays(); err != nil {
			return p, nil, nil, nil, err
		}
	}
	if b.step == nil {
		if guarded {
			guard = b.cfg.guard().Guard(ws, b.listings)
		}
		p, err = b.planProfile(ws, req, undo)
		return p, nil, nil, guard, err
	}
	if guarded {
		if dirs = b.listings.Take(ws); dirs == nil {
			dirs = hostfs.NewDirListings()
		}
	}
	p, pool, err = b.planStart(ws, req, undo, dirs, nil)
	if err == nil && req.ServiceOverlay != "" {
		p.Overlay, p.ServiceOverlay = req.ServiceOverlay, true
		return p, pool, dirs, nil, nil
	}
	if err == nil && b.overlay && !req.Service && (guarded || req.probeOverlay) {
		// Not for a service: its writes would reach the workspace only when
		// it exits. It writes directly, behind the protected paths, and the
		// host-config check runs when it ends.
		// Last, so that nothing after it fails: run removes it, or its
		// guard gives it back, once it ends.
		p.Overlay, err = b.overlays.Take(b.cfg.guard(), ws)
	}
	return p, pool, dirs, nil, err
}

// runFiles are the pipes of one bwrap run: the read end of bwrap's JSON
// status, which the worker reads, and the files the child gets (the status
// pipe's write end, the generated passwd and group unless the /etc view
// holds them, the seccomp filter).
// Each is closed once, by closeChild (the worker's copies of the child's
// files, right after Start) or by close (whatever is still open).
type runFiles struct {
	statusR                         *os.File
	statusW, passwd, group, seccomp *os.File
	// With the mount step: its status (read end, write end), its plan
	// (read end; planW the write end, see feedPlan), and its binary (the
	// worker's, shared by every run: never closed here).
	stepR, stepW, stepPlan, stepExe *os.File
	planW                           *os.File
}

// openRunFiles opens the run's pipes, all of them or none; the mount
// step's too when the profile has it (step is then the probed step).
func openRunFiles(p bwrapProfile, step *mountStep) (*runFiles, error) {
	f := &runFiles{}
	ok := false
	defer func() {
		if !ok {
			f.close()
		}
	}()
	var err error
	if f.seccomp, err = seccompFile(); err != nil {
		return nil, err
	}
	if f.statusR, f.statusW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("sandbox: status pipe: %w", err)
	}
	if !p.IdentityInSystem { // else the /etc view holds them
		passwd, group := sysview.Identity()
		if f.passwd, err = dataPipe(passwd); err != nil {
			return nil, err
		}
		if f.group, err = dataPipe(group); err != nil {
			return nil, err
		}
	}
	if p.Step {
		if f.stepPlan, f.planW, err = os.Pipe(); err != nil {
			return nil, fmt.Errorf("sandbox: mount step's plan pipe: %w", err)
		}
		if f.stepR, f.stepW, err = os.Pipe(); err != nil {
			return nil, fmt.Errorf("sandbox: mount step's status pipe: %w", err)
		}
		f.stepExe = step.exe
	}
	ok = true
	return f, nil
}

// feedPlan writes the mount step's plan for p, the whole of it and its
// end, then closes the pipe; a goroutine writes it, since a plan may be
// larger than the pipe's buffer (when the step is gone first, the write
// fails and the goroutine ends). A plan that cannot be made is never
// written (dropPlan). Without the step it does nothing.
func (f *runFiles) feedPlan(p bwrapProfile) error {
	if f.planW == nil {
		return nil
	}
	plan, err := stepMounts(p)
	if err != nil {
		f.dropPlan()
		return err
	}
	w := f.planW
	f.planW = nil
	go func() {
		defer w.Close()
		_, _ = w.Write(plan)
	}()
	return nil
}

// dropPlan closes the plan's pipe with nothing written: the step finds no
// plan and the command does not run.
func (f *runFiles) dropPlan() {
	if f.planW != nil {
		f.planW.Close()
		f.planW = nil
	}
}

// child returns the child's files for cmd.ExtraFiles, each at the place
// that makes it the fd the profile names (ExtraFiles[i] is fd 3+i).
func (f *runFiles) child() []*os.File {
	files := make([]*os.File, 4, 7)
	files[fdStatus-3], files[fdPasswd-3], files[fdGroup-3], files[fdSeccomp-3] = f.statusW, f.passwd, f.group, f.seccomp
	if f.stepExe != nil {
		files = files[:7]
		files[fdStepPlan-3], files[fdStepStatus-3], files[fdStepExe-3] = f.stepPlan, f.stepW, f.stepExe
	}
	return files
}

// closeChild closes the worker's copies of the child's files: after Start
// the child has its own, and the status reader sees EOF only once every
// write end is gone.
func (f *runFiles) closeChild() {
	for _, p := range []**os.File{&f.statusW, &f.passwd, &f.group, &f.seccomp, &f.stepPlan, &f.stepW} {
		if *p != nil {
			(*p).Close()
			*p = nil
		}
	}
	f.stepExe = nil
}

// close closes whatever is still open.
func (f *runFiles) close() {
	f.closeChild()
	f.dropPlan()
	for _, p := range []**os.File{&f.statusR, &f.stepR} {
		if *p != nil {
			(*p).Close()
			*p = nil
		}
	}
}

// command is the bwrap command of one run, and how to start it. When the
// worker has a pids cgroup (see cgroup.go) it creates the run's own, and
// bwrap starts inside it; what it sets up is registered with undo.
func (b *bwrapSandbox) command(args, env []string, files []*os.File, undo *cleanups) (*exec.Cmd, *runCgroup, func() error, error) {
	cmd := exec.Command(b.bwrap, args...)
	cmd.Env = env // see bwrapProfile.bwrapEnv
	cmd.Dir = "/"
	cmd.ExtraFiles = files
	start := cmd.Start
	var cg *runCgroup
	switch {
	case b.pids != nil && !b.pids.v2:
		// No CLONE_INTO_CGROUP on v1: a slot's thread, which lives in the
		// slot's cgroup, starts bwrap (see v1Slot).
		slot, err := v1PoolFor(*b.pids).checkout(b.cfg.NProc)
		if err != nil {
			return nil, nil, nil, err
		}
		undo.add(slot.checkin) // undo runs once the run is over
		cg = slot.cg
		start = func() error { return slot.start(cmd) }
	case b.pids != nil:
		// CLONE_INTO_CGROUP: bwrap starts inside the cgroup, no race.
		var err error
		cg, err = b.pids.create(b.cfg.NProc)
		if err != nil {
			return nil, nil, nil, err
		}
		undo.add(cg.remove)
		d, err := os.Open(cg.dir)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("sandbox: pids cgroup: %w", err)
		}
		undo.add(func() { d.Close() })
		cmd.SysProcAttr = cgroupSysProcAttr(int(d.Fd()))
	}
	return cmd, cg, start, nil
}

// errRetryRun marks a run the sandbox stopped before the command could do
// anything, which may be run again.
var errRetryRun = errors.New("retry")

// statusWatch reads bwrap's JSON status while the command runs: it tells a
// setup failure (no child-pid) apart from the command exiting 1, and names
// the sandbox's init for the kill sequence.
type statusWatch struct {
	wg      sync.WaitGroup
	started bool // read after wg.Wait
	initPID atomic.Int64
	// initStart is the init's start time (procStart), so that reap never
	// signals a process that took its PID later; read after wg.Wait.
	initStart string
	// pidfd, when hasPidfd, is the init's pidfd (none before Linux 5.3),
	// opened when bubblewrap names it: reap kills it through the pidfd and
	// is woken the moment it is gone; read after wg.Wait, closed by reap.
	pidfd    int
	hasPidfd bool
	escaped  atomic.Bool
}

func watchStatus(r io.Reader, cg *runCgroup) *statusWatch {
	w := &statusWatch{}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		dec := json.NewDecoder(r)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				_, _ = io.Copy(io.Discard, r)
				return
			}
			if pid, ok := m["child-pid"].(float64); ok {
				w.started = true
				w.initPID.Store(int64(pid))
				w.initStart = hostfs.ProcStart(int(pid))
				if !w.hasPidfd && w.initStart != "" {
					w.pidfd, w.hasPidfd = openPidfd(int(pid))
				}
				// Defence in depth: a sandbox outside its pids cgroup would
				// run without a process limit; kill it rather than run.
				if cg != nil && !cg.contains(int(pid)) {
					w.escaped.Store(true)
					_ = syscall.Kill(int(pid), syscall.SIGKILL)
				}
			}
		}
	}()
	return w
}

// verdict waits for the status to end and judges the finished run with it.
func (w *statusWatch) verdict(res Result, cg *runCgroup) (Result, error) {
	w.wg.Wait()
	w.reap()
	if w.escaped.Load() {
		return res, fmt.Errorf("sandbox: the sandbox started outside its pids cgroup and was stopped; %w", errRetryRun)
	}
	if cg != nil && res.Killed && res.KillReason == "timeout" && cg.hitMax() {
		res.KillReason = "timeout (process limit reached)"
	}
	if !w.started && !res.Killed {
		return res, fmt.Errorf("sandbox: bubblewrap could not set up the sandbox: %s", strings.TrimSpace(hostfs.TrimForLog(res.Stderr)))
	}
	return res, nil
}

// signalSandbox delivers the kill sequence to a bwrap sandbox. bwrap's init
// (PID 1 of the sandbox's PID namespace, host pid initPID) ignores SIGTERM,
// and killing the outer bwrap would return before the namespace is torn down,
// so: SIGTERM goes to every process inside (the init's descendants), giving
// the command its grace period; SIGKILL goes to the init itself, which makes
// the kernel kill everything in the namespace, and the outer bwrap exits only
// after that, so "Run returned" means "nothing is left".
func signalSandbox(initPID, outerPID int, sig syscall.Signal) {
	if initPID <= 0 {
		// bwrap has not reported the sandbox yet: it is still setting up,
		// and killing its process group is all there is to do.
		_ = syscall.Kill(-outerPID, syscall.SIGKILL)
		return
	}
	if sig == syscall.SIGKILL {
		_ = syscall.Kill(initPID, syscall.SIGKILL)
		return
	}
	for _, pid := range descendants(initPID) {
		_ = syscall.Kill(pid, sig)
	}
}

// reap makes sure nothing of the sandbox runs once Run returns. bwrap
// exits as soon as its init reports the command's status, and the init (and
// with it, the pid namespace: every process a command left running) dies
// only when its parent-death signal is handled, a moment later, or on a
// loaded machine much later: long enough for a background process to write
// after the host-config check has looked. So the init is killed and waited
// for until it is gone, or a zombie (the namespace is empty by then), for
// at most two seconds.
func (w *statusWatch) reap() {
	pid := int(w.initPID.Load())
	if w.hasPidfd {
		w.hasPidfd = false
		defer closeFD(w.pidfd)
		if killAndWait(w.pidfd, 2*time.Second) {
			return
		}
	}
	if pid <= 0 || w.initStart == "" {
		return
	}
	deadline := time.Now().Add(2 * time.Second)
	for wait := 50 * time.Microsecond; ; wait = min(2*wait, 10*time.Millisecond) {
		state, start, err := hostfs.ProcStat(pid)
		if err != nil || start != w.initStart || hostfs.IsDead(state) {
			return // gone (or its PID another process's), or a zombie
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(wait)
	}
}

// descendants lists the processes below pid, from /proc (ppid links).
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name (field 2) may contain spaces and parens; ppid is
		// the second field after the last ')'.
		rest := string(b)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			continue
		}
		pp, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		children[pp] = append(children[pp], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// dataPipe returns the read end of a pipe already holding data (small enough
// for the pipe buffer), for bwrap's --ro-bind-data.
func dataPipe(data string) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: data pipe: %w", err)
	}
	defer w.Close()
	if _, err := io.WriteString(w, data); err != nil {
		r.Close()
		return nil, fmt.Errorf("sandbox: data pipe: %w", err)
	}
	return r, nil
}
