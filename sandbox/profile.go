package sandbox

import (
	"fmt"
	"sync"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/masks"
	"github.com/custos-dev/custos/sandbox/mount"
	"github.com/custos-dev/custos/sandbox/netproxy"
	"github.com/custos-dev/custos/sandbox/protect"
	"github.com/custos-dev/custos/sandbox/provision"
	"github.com/custos-dev/custos/sandbox/sysview"
)

// The bubblewrap command line of one run is a pure function of a profile
// value (bwrapArgs), the way Codex's linux-sandbox builds its argument
// vector from a policy: everything that decides it, including what the
// file-system probes found, is a field of bwrapProfile, gathered beforehand
// by planProfile. So the exact argument vector can be tested without running
// bubblewrap (profile_test.go).

// bwrapProfile is everything that decides the bubblewrap argument vector of
// one run.
type bwrapProfile struct {
	// Workspace is the workspace's real path: bound read-write at its own
	// path, and the command's working directory.
	Workspace string
	// TmpSize is the size of the sandbox's own /tmp (a tmpfs), in bytes.
	TmpSize int64
	// System is what of the host's system is visible, read-only: the
	// top-level system directories (or the symbolic links a merged-/usr
	// host has instead) and the allowed /etc entries (see probeSystem).
	System []mount.Mount
	// IdentityInSystem says System's /etc is the view that already holds
	// the sandbox's passwd and group; otherwise bwrapArgs mounts them
	// from fdPasswd and fdGroup.
	IdentityInSystem bool
	// Proxy, when set, brings the network allowlist proxy into the
	// sandbox: its socket and the bridge helper are mounted, and the
	// command runs behind the helper. Nil: no network at all.
	Proxy *proxyMounts
	// Protected keeps the protected paths read-only (planProtected): the
	// present ones bound onto themselves, missing ones held by empty
	// placeholders of the sandbox's own, the directories on the way pinned.
	Protected []mount.Mount
	// Toolchain is what the workspace's toolchains are given (sandbox/provision):
	// the host's caches read-only, the workspace's own caches read-write,
	// the user's git identity, the credential masks inside those caches,
	// in that order. Mounted before the workspace, so nothing of it can
	// cover the workspace.
	Toolchain []mount.Mount
	// Masks are the deny rules' masks and pins as expanded against the
	// workspace (ExpandMasks: which paths exist, and which are
	// directories), and MaskSources what is bound over them.
	Masks       masks.Plan
	MaskSources masks.Sources
	// Seccomp installs the seccomp filter read from fdSeccomp.
	Seccomp bool
	// Step: custos' mount step makes the pins, the protected paths and the
	// masks inside the sandbox, makes the root read-only, sets the rlimits,
	// loads the seccomp filter and hands the command its environment
	// (mountinit.go); bubblewrap makes the rest.
	Step bool
	// Command is what runs in the sandbox (the request's argv behind
	// prlimit); the proxy's helper goes in front of it when Proxy is set.
	Command []string
	// Pid1, without the step, is the custos binary (bound at sbHelper)
	// that runs as the sandbox's PID 1 in bubblewrap's place (helperPid1):
	// bubblewrap's own init is dumpable and outside the seccomp filter,
	// so a command could write its memory and run code past the filter.
	Pid1 string
	// Limits, with the step, are the rlimits the step sets before it execs
	// the command, which is then the request's argv alone (one exec less
	// than prlimit's); nil: prlimit in Command sets them.
	Limits *limits
	// Overlay, with the mount step, is the run's overlay directory on the
	// host (its upper and work directories, sandbox/hostguard): the
	// step mounts the workspace as an overlay's lower layer, so that what
	// the command writes reaches the host only once custos has checked it.
	Overlay string
	// ServiceOverlay: Overlay is a long-lived server's (Request's
	// ServiceOverlay): no placeholders in the workspace for its life.
	ServiceOverlay bool
	// CacheOverlay, with the step, is a host cache under a layer of the
	// server's own (a uvx server's uv cache), which the step mounts.
	CacheOverlay *provision.CacheOverlay
	// ReadOnlyWorkspace: the workspace, and all mounted below it, is
	// read-only (a language server's view).
	ReadOnlyWorkspace bool
	// CacheDir is the workspace's cache directory on the host, if any.
	CacheDir string
	// Env is the command's environment. It is not part of the arguments:
	// bubblewrap hands its own environment to the command unchanged, so it
	// becomes the environment of the bwrap process.
	Env []string
}

// proxyMounts are the host paths the allowlist proxy needs in the sandbox.
type proxyMounts struct {
	// Helper is the custos binary run as the in-sandbox bridge.
	Helper string
	// Socket is the proxy's unix socket on the host.
	Socket string
}

// The child's file descriptors: cmd.ExtraFiles, in this order, become fds 3,
// 4, ... (runFiles.child hands them over in this order).
const (
	fdStatus     = 3 + iota // bwrap's --json-status-fd
	fdPasswd                // the generated /etc/passwd
	fdGroup                 // the generated /etc/group
	fdSeccomp               // the seccomp filter
	fdStepPlan              // the mount step's plan (mountinit.go)
	fdStepStatus            // the mount step's status pipe
	fdStepExe               // the mount step's binary
)

// bwrapHead is the start of the argument vector: namespaces, identity,
// capabilities and the status descriptor.
func bwrapHead(p bwrapProfile) []string {
	a := []string{
		"--die-with-parent", "--new-session",
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		// Even with the allowlist proxy the command has no direct network: it
		// only reaches the bridge on its own loopback.
		"--unshare-net",
		"--uid", fmt.Sprint(SandboxUID), "--gid", fmt.Sprint(SandboxUID),
		"--hostname", "custos-sandbox",
		"--disable-userns", "--cap-drop", "ALL",
	}
	if p.Step {
		// The step is the sandbox's PID 1 (cm_init): bubblewrap's own init
		// would stay, dumpable, in the mount namespace where the workspace
		// is the host's. The capabilities are for the step alone, which
		// drops them before the command.
		a = append(a, "--as-pid-1", "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP")
		if p.Overlay != "" || p.CacheOverlay != nil {
			// overlayfs works in its work directory with its mounter's
			// credentials, through directories it makes mode 000.
			a = append(a, "--cap-add", "CAP_DAC_OVERRIDE")
		}
	}
	return append(a, "--json-status-fd", fmt.Sprint(fdStatus))
}

// bwrapArgs is the bubblewrap argument vector of a profile, the command
// included. It does no I/O. The order of the mounts matters: a later mount
// covers an earlier one.
func bwrapArgs(p bwrapProfile) []string {
	a := bwrapHead(p)
	a = append(a, mount.Args(p.System)...)
	if !p.IdentityInSystem {
		a = append(a,
			"--perms", "0644", "--ro-bind-data", fmt.Sprint(fdPasswd), "/etc/passwd",
			"--perms", "0644", "--ro-bind-data", fmt.Sprint(fdGroup), "/etc/group")
	}
	a = append(a,
		"--proc", "/proc",
		"--dev", "/dev",
		"--size", fmt.Sprint(p.TmpSize), "--tmpfs", sbTmp,
		"--dir", sbHome,
		"--dir", sbTmp+"/go",
	)
	if p.Proxy != nil {
		a = append(a,
			"--ro-bind", p.Proxy.Helper, sbHelper,
			"--bind", p.Proxy.Socket, sbProxySock,
		)
	} else if p.Pid1 != "" && !p.Step {
		a = append(a, "--ro-bind", p.Pid1, sbHelper)
	}
	a = append(a, mount.Args(p.Toolchain)...)
	if p.CacheOverlay != nil {
		a = append(a, "--bind", p.CacheOverlay.Layers, sbCacheOverlay)
	}
	if p.Step && p.Overlay != "" {
		// For the step alone, which covers it once the overlay is mounted.
		a = append(a, "--bind", p.Overlay, sbOverlay)
	}
	// The workspace comes after /tmp so a workspace under /tmp is visible on
	// top of the fresh tmpfs, at its own path. The masks' pins come right
	// after it, before anything mounted below the workspace (a pin bound
	// later would cover those mounts with the host's view).
	bind := "--bind"
	if p.ReadOnlyWorkspace && !p.Step {
		// Read-only at once; the protected paths are read-only with it (the
		// step instead makes the whole tree read-only after its mounts).
		bind = "--ro-bind"
	}
	a = append(a, bind, p.Workspace, p.Workspace)
	pins, maskArgs := p.Masks.Args(p.MaskSources)
	if !p.Step && !p.ReadOnlyWorkspace {
		// Read-only, nothing in the workspace can move under a mask, and a
		// pin (bound read-write) would open a hole in it.
		a = append(a, pins...)
		a = append(a, mount.Args(p.Protected)...)
	}
	// The root is bwrap's own tmpfs; make it read-only so nothing outside the
	// workspace and /tmp is writable (mounts below it keep their own flags).
	// The step does it itself, without bubblewrap's reading of the mount
	// table.
	if !p.Step {
		a = append(a, "--remount-ro", "/")
	}
	a = append(a, "--chdir", p.Workspace)
	command := p.Command
	if p.Proxy != nil {
		command = append([]string{sbHelper, "--listen", sbProxyAddr, "--socket", sbProxySock, "--"}, command...)
	}
	if p.Step {
		// The step makes the pins, the protected paths and the masks, in
		// that order, loads the filter, then runs the command.
		return append(append(a, "--"), stepCommand(p.Seccomp, command)...)
	}
	// The masks go last, on top of everything.
	a = append(a, maskArgs...)
	if p.Seccomp {
		a = append(a, seccompArgs(fdSeccomp)...)
	}
	if p.Pid1 != "" {
		a = append(a, "--as-pid-1", "--")
		return append(append(a, sbHelper, pid1Marker, "--"), command...)
	}
	a = append(a, "--")
	return append(a, command...)
}

// bwrapEnv is the environment of the bwrap process. bubblewrap hands its
// own to the command, so it is the command's; with the mount step it is
// empty, and the step hands the command its environment from the plan, so
// that nothing in it reaches the step's dynamic loader while the step
// still holds capabilities.
func (p bwrapProfile) bwrapEnv() []string {
	if p.Step {
		return []string{}
	}
	return p.Env
}

// planProfile prepares on the host what one run's sandbox needs (the masks'
// sources and placeholders, the allowlist proxy, the protected paths'
// placeholders), probes the file system, and returns the profile. Whatever
// it set up is registered with undo, also when it fails. It is planStart
// and planLate in one, for a bubblewrap that makes every mount itself;
// with the mount step, run starts bubblewrap between the two.
func (b *bwrapSandbox) planProfile(ws string, req Request, undo *cleanups) (bwrapProfile, error) {
	var own workspacePlan
	p, pool, err := b.planStart(ws, req, undo, nil, func() (err error) {
		own, err = b.planWorkspace(ws, req, undo, nil)
		return err
	})
	if err != nil {
		return p, err
	}
	return p, planInside(&p, own, pool, undo)
}

// planStart plans what bubblewrap's own arguments and the command's
// environment need: the system's mounts, the toolchains', the allowlist
// proxy, the command and its limits. The system's mounts (kept between
// runs, see etcwatch.go) and the toolchains' are found in goroutines while
// the proxy starts and meanwhile (nil: nothing) runs on this one; all are
// waited for before anything returns. pool is where the run's placeholders come from; dirs
// (may be nil) are the workspace's listings, for the toolchains'
// detection.
func (b *bwrapSandbox) planStart(ws string, req Request, undo *cleanups, dirs *hostfs.DirListings, meanwhile func() error) (p bwrapProfile, pool *protect.DirPool, err error) {
	p = bwrapProfile{Workspace: ws, TmpSize: b.cfg.TmpSizeBytes, Seccomp: true, ReadOnlyWorkspace: req.ReadOnlyWorkspace}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.System, p.IdentityInSystem = sysview.MountsFor(ws)
	}()
	var pr *provision.Provision
	var prErr error
	switch {
	case req.Home != "":
		// A server's own home, its caches in it: none of the workspace's.
		pr, prErr = b.prov.PlanServer(req.Home, req.Network, req.Argv)
	case b.prov != nil && !req.bare:
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr, prErr = b.prov.Plan(ws, wantOf(req), dirs)
		}()
	}
	if len(req.Network.AllowedDomains) > 0 {
		p.Proxy, err = b.startProxy(req, undo)
	}
	if err == nil && meanwhile != nil {
		err = meanwhile()
	}
	wg.Wait()
	pool = protect.OpenDirPool("")
	if pr != nil && b.prov != nil {
		undo.add(func() { b.prov.Release(pr) })
	}
	if err == nil {
		err = prErr
	}
	if err != nil {
		return p, pool, err
	}
	var extra map[string]string
	if pr != nil {
		p.Toolchain, extra, p.CacheDir = pr.Mounts, pr.Env, pr.CacheDir
		if o := pr.CacheOverlay; o != nil && b.step != nil && b.overlay {
			p.CacheOverlay, p.Toolchain = o, append(p.Toolchain, mount.Mount{Kind: mount.ROBind, Src: o.Lower, Dst: o.At})
		} else if o != nil {
			b.cfg.Logger.Warn("sandbox: the uvx server has its home's own uv cache: this sandbox mounts no overlay over the host's", "cache", o.Lower)
		}
		if pr.Cache != nil {
			// Locked for the run: the placeholders go back into its pool
			// (undo runs last first) before the lock is released.
			pool = protect.OpenDirPool(pr.CacheDir)
		}
	}
	p.Command = prlimitArgv(b.prlimit, b.cfg.limitsFor(req), req.Argv)
	if b.step != nil {
		l := b.cfg.limitsFor(req)
		p.Step, p.Limits, p.Command = true, &l, req.Argv
	} else if p.Pid1, err = helperExecutable(); err != nil {
		return p, pool, fmt.Errorf("sandbox: the sandbox's PID 1: %w", err)
	}
	proxyAddr := ""
	if p.Proxy != nil {
		proxyAddr = sbProxyAddr
	}
	p.Env, err = buildEnv(req, sysview.Path, sbHome, sbTmp, proxyAddr, extra)
	return p, pool, err
}

// startProxy starts the network allowlist proxy of one run.
func (b *bwrapSandbox) startProxy(req Request, undo *cleanups) (*proxyMounts, error) {
	helper, err := helperExecutable()
	if err != nil {
		return nil, err
	}
	px, err := netproxy.Start(b.cfg.Logger, b.cfg.Resolver, req.Network, "unix", "")
	if err != nil {
		return nil, err
	}
	undo.add(func() { px.Close() })
	return &proxyMounts{Helper: helper, Socket: px.SocketPath()}, nil
}

// planLate is the part of the plan that only the workspace's own mounts
// need (planWorkspace, planInside), for a run whose mount step makes them:
// run does it once bubblewrap has started, while it sets up the sandbox,
// and the step waits for it (see runFiles.feedPlan). dirs (may be nil)
// are the listings of the host-config snapshot taken just before.
func (b *bwrapSandbox) planLate(ws string, req Request, p *bwrapProfile, pool *protect.DirPool, undo *cleanups, dirs *hostfs.DirListings) error {
	own, err := b.planWorkspace(ws, req, undo, dirs)
	if err != nil {
		return err
	}
	return planInside(p, own, pool, undo)
}

// planInside puts the workspace's own mounts into p: the masks, and the
// protected paths, their placeholders made (from pool).
func planInside(p *bwrapProfile, own workspacePlan, pool *protect.DirPool, undo *cleanups) error {
	p.Masks, p.MaskSources = own.masks.Plan, own.masks.Src
	if p.ReadOnlyWorkspace {
		// All of it is read-only: no protected path needs a mount, and none
		// a placeholder in the workspace for as long as a server runs.
		return nil
	}
	if p.ServiceOverlay {
		// A server runs for hours: no placeholder stays in the workspace
		// that long. What it makes at a missing protected name stays in
		// its upper layer, which the host guard withholds or checks.
		if own.prot.Err != nil {
			return own.prot.Err
		}
		p.Protected = own.prot.MountsWithoutPlaceholders()
		return nil
	}
	undo.add(func() { own.prot.RemovePlaceholders(pool) })
	if err := own.prot.Prepare(pool); err != nil {
		return err
	}
	p.Protected = own.prot.Mounts
	return nil
}

// workspacePlan is what planWorkspace found and set up.
type workspacePlan struct {
	masks *masks.Run
	prot  *protect.Plan
}

// planWorkspace prepares the masks (first, so that their placeholders
// exist when they are mounted over, even below a directory the protected
// mounts make read-only) and the protected paths' plan (see
// planProtected for dirs).
func (b *bwrapSandbox) planWorkspace(ws string, req Request, undo *cleanups, dirs *hostfs.DirListings) (workspacePlan, error) {
	var own workspacePlan
	prepare := func() (*masks.Run, error) { return masks.Prepare(ws, req.ReadDeny, req.EditDeny, b.step == nil) }
	if req.ReadOnlyWorkspace {
		prepare = func() (*masks.Run, error) { return masks.PrepareReadOnly(ws, req.ReadDeny, b.step == nil) }
	}
	mr, err := prepare()
	if err != nil {
		return own, err
	}
	undo.add(mr.Undo)
	own.masks = mr
	own.prot = protect.NewPlan(ws, dirs)
	return own, nil
}

// cleanups undoes, last first, what a run set up on the host.
type cleanups []func()

func (c *cleanups) add(f func()) { *c = append(*c, f) }

func (c *cleanups) run() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
	*c = nil
}
