package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/hostguard"
	"github.com/custos-dev/custos/sandbox/netproxy"
	"github.com/custos-dev/custos/sandbox/probecache"
	"github.com/custos-dev/custos/sandbox/provision"
	"github.com/custos-dev/custos/sandbox/sysview"
)

// Backend names.
const (
	BackendBwrap    = "bwrap"
	BackendFallback = "fallback"
)

// FallbackNote is attached to every Result of the fallback backend so the model
// (and the human reading the audit) knows the command was not isolated.
const FallbackNote = "command ran WITHOUT OS isolation (bubblewrap unavailable): only application-level restrictions applied (scrubbed env, cwd = workspace, own process group, timeout, rlimits)"

// Defaults for the zero values of Config. They are sized so that a normal
// build/test run (go build, npm test, make) fits comfortably, while a runaway
// command is stopped long before it hurts the worker.
const (
	DefaultTimeout         = 2 * time.Minute
	DefaultMaxTimeout      = 10 * time.Minute
	DefaultCPUSeconds      = 600
	DefaultMemoryBytes     = 4 << 30 // RLIMIT_AS; Go and JVM reserve a lot of address space
	DefaultFileSizeBytes   = 1 << 30
	DefaultNProc           = 512
	DefaultMaxOutput       = 1 << 20
	DefaultOutputKillBytes = 32 << 20
	DefaultTmpSizeBytes    = 1 << 30
	DefaultKillGrace       = 2 * time.Second
	// SandboxUID is the unprivileged uid/gid the command runs as inside the
	// bubblewrap user namespace, whatever uid the worker has.
	SandboxUID = sysview.UID
)

// Config configures New. The zero value is usable: it looks up bwrap in PATH,
// refuses commands when bubblewrap cannot run (see AllowUnconfined), and
// applies the default limits.
type Config struct {
	// BwrapPath is the bubblewrap binary; "" looks up "bwrap" in PATH.
	BwrapPath string
	// FailIfUnavailable makes New return an error instead of the fallback
	// backend when bubblewrap cannot run here.
	FailIfUnavailable bool
	Logger            *slog.Logger

	// DefaultTimeout applies when Request.Timeout is 0; MaxTimeout caps it.
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL on timeout.
	KillGrace time.Duration

	// Limits: 0 means the default, a negative value means "no limit".
	CPUSeconds    int64 // RLIMIT_CPU
	MemoryBytes   int64 // RLIMIT_AS
	FileSizeBytes int64 // RLIMIT_FSIZE
	NProc         int64 // RLIMIT_NPROC (counted per sandbox user namespace under bwrap)
	// MaxOutput is how much of each of stdout/stderr is kept when
	// Request.MaxOutput is 0.
	MaxOutput int
	// OutputKillBytes: once a stream produced this much, the command is killed
	// ("output limit"), so `yes` cannot spin forever.
	OutputKillBytes int64
	// TmpSizeBytes sizes the sandbox's private tmpfs /tmp.
	TmpSizeBytes int64

	// HostEnv is where the user's toolchain configuration and caches are
	// found (zero: the worker's own home and environment).
	HostEnv provision.HostEnv
	// CacheDir holds the per-workspace build and download caches ("":
	// DefaultCacheDir); CacheBytes caps them all together (0:
	// DefaultCacheBytes; negative: no cap).
	CacheDir   string
	CacheBytes int64

	// QuarantineDir keeps what custos sets aside after a command: git
	// hooks, config and pointers a command left for the host to run ("":
	// "quarantine" beside CacheDir, or in custos' state directory).
	// HostScanEntries bounds the directory entries read to find them, before
	// and after each command (0: defaultHostScanEntries). See sandbox/hostguard.
	QuarantineDir   string
	HostScanEntries int

	// ProbeCache, when set, is a file where New keeps a passed probe for
	// the next process to use instead of probing again (see
	// probecache.go): for processes that run one command each. A worker,
	// which probes once for all its commands, leaves it empty.
	ProbeCache string
	// IdentityCache, when set, is a file where the user's git identity is
	// kept for the next process, with what it was read from (see
	// gitid.go): reading it runs git, 15 to 20 ms, which a process that
	// runs one command pays every time. A worker keeps it in memory.
	IdentityCache string

	// Resolver, when set, replaces DNS in the network allowlist proxy. It exists
	// for tests (map a name to an httptest server on 127.0.0.1).
	Resolver netproxy.Resolver
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = DefaultTimeout
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.KillGrace <= 0 {
		c.KillGrace = DefaultKillGrace
	}
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.CPUSeconds, DefaultCPUSeconds)
	def(&c.MemoryBytes, DefaultMemoryBytes)
	def(&c.FileSizeBytes, DefaultFileSizeBytes)
	def(&c.NProc, DefaultNProc)
	def(&c.OutputKillBytes, DefaultOutputKillBytes)
	def(&c.TmpSizeBytes, DefaultTmpSizeBytes)
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	return c
}

// ErrUnavailable is returned (wrapped) by New when FailIfUnavailable is set and
// bubblewrap cannot run.
var ErrUnavailable = errors.New("sandbox: bubblewrap unavailable")

// New probes bubblewrap once, by really running `true` in the same profile a
// command gets, and returns the bwrap backend when that works. Otherwise it
// logs why once and returns the fallback backend, whose Run refuses every
// command (an error wrapping ErrUnavailable, with UnavailableHelp) unless the
// request sets AllowUnconfined (then every Result.Note says the command ran
// without OS isolation); or New returns an error wrapping ErrUnavailable
// when cfg.FailIfUnavailable is set.
func New(cfg Config) (Sandbox, error) {
	cfg = cfg.withDefaults()
	// What commands of a process that died mid-run left for the host.
	cfg.guard().RecoverHostConfig(cfg.Logger)
	prlimit, _ := exec.LookPath("prlimit")

	bw, why := probeBwrap(cfg, prlimit)
	if bw != nil {
		cfg.Logger.Info("sandbox: using bubblewrap", "bwrap", bw.bwrap, "why", why)
		return bw, nil
	}
	if cfg.FailIfUnavailable {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, why)
	}
	cfg.Logger.Warn("sandbox: bubblewrap unavailable: commands are refused unless the user's settings allow unsandboxed runs (each then asks a person)", "why", why)
	return &fallback{cfg: cfg, prlimit: prlimit, why: why}, nil
}

// WhyNoBwrap is the backend's reason when bubblewrap is not installed.
const WhyNoBwrap = "bwrap not found in PATH (install bubblewrap)"

func probeBwrap(cfg Config, prlimit string) (*bwrapSandbox, string) {
	path := cfg.BwrapPath
	if path == "" {
		p, err := exec.LookPath("bwrap")
		if err != nil {
			return nil, WhyNoBwrap
		}
		path = p
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Sprintf("bwrap at %q: %v", path, err)
	}
	if prlimit == "" {
		// Without prlimit the command would run without rlimits; fail closed on
		// the isolated backend rather than pretend.
		return nil, "prlimit (util-linux) not found: resource limits cannot be applied"
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Sprintf("bwrap path %q: %v", path, err)
	}
	b := &bwrapSandbox{cfg: cfg, bwrap: abs, prlimit: prlimit, prov: provisionerFor(cfg), listings: &hostfs.HostListings{}, overlays: &hostguard.OverlayPool{}}
	limitNote := "process limit: RLIMIT_NPROC"
	if os.Geteuid() == 0 && cfg.NProc > 0 {
		pc, err := findPidsCgroup()
		if err != nil {
			// Not fatal (everything else still holds), but loud: as root a
			// fork bomb is only stopped by the timeout.
			cfg.Logger.Warn("sandbox: worker runs as root and no pids cgroup is usable: the process limit is NOT enforced", "err", err)
			limitNote = "process limit NOT enforced (root without a pids cgroup)"
		} else {
			b.pids = pc
			limitNote = "process limit: pids cgroup " + pc.parent
			if !pc.v2 {
				v1PoolFor(*pc).prewarm() // made while the probe and the first run plan
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// One probe run in the common case: through the mount step, whose
	// checks cover what the plain probe shows (and more). Only when the step
	// is off or fails does `true` run with bubblewrap's mounts alone.
	stepNote := "workspace mounts by custos' mount step"
	sp, err := b.probeStep(ctx)
	probed := sp.note
	if err == nil {
		b.step, b.overlay = sp.step, sp.overlayErr == nil
		if sp.overlayErr == nil {
			stepNote += "; writes applied after the host-config check (workspace overlay)"
		} else {
			cfg.Logger.Warn("sandbox: commands write to the workspace directly (no overlay): a tool on the host can act on what a command plants while it runs", "why", sp.overlayErr)
			stepNote += "; no workspace overlay (" + sp.overlayErr.Error() + ")"
		}
	} else {
		cfg.Logger.Info("sandbox: bubblewrap makes every mount (the mount step is off)", "why", err)
		stepNote = "mounts by bubblewrap (mount step off: " + err.Error() + ")"
		ws, err := os.MkdirTemp("", "custos-sandbox-probe-")
		if err != nil {
			return nil, fmt.Sprintf("probe workspace: %v", err)
		}
		defer os.RemoveAll(ws)
		res, err := probeRun(ctx, b, Request{Workspace: ws, Argv: []string{"true"}, Timeout: 10 * time.Second, bare: true})
		if err != nil {
			return nil, fmt.Sprintf("probe `bwrap ... true` failed: %v", err)
		}
		if res.ExitCode != 0 || res.Killed {
			return nil, fmt.Sprintf("probe `bwrap ... true` exited %d (killed=%v %s): %s", res.ExitCode, res.Killed, res.KillReason, hostfs.TrimForLog(res.Stderr))
		}
	}
	b.why = fmt.Sprintf("bubblewrap %s: %s; user/pid/net/ipc/uts namespaces, read-only system, workspace read-write; %s; %s", abs, probed, limitNote, stepNote)
	return b, b.why
}

// probeStep probes the mount step, or takes an earlier process's passed
// probe from cfg.ProbeCache, and says which.
func (b *bwrapSandbox) probeStep(ctx context.Context) (stepProbe, error) {
	cache := b.cfg.ProbeCache
	var key probecache.Key
	keyed := false
	if cache != "" { // a worker, which keeps no record, reads no key either
		key, keyed = probecache.KeyFor(b.bwrap, b.prlimit)
	}
	if keyed && probecache.Cached(cache, key) {
		step, err := openMountStep()
		return stepProbe{step: step, note: "probe ok (an earlier process's, " + cache + ")"}, err
	}
	sp, err := probeMountStep(ctx, b)
	if err == nil && sp.overlayErr == nil && keyed {
		// Only a probe that passed whole is kept: without the overlay,
		// each process probes again.
		probecache.Save(cache, key)
	}
	sp.note = "probe ok"
	return sp, err
}

// probeRun runs a probe's request, again when the sandbox stopped it and
// said to retry (on a loaded machine where many processes start sandboxes
// at once): a failed probe would refuse every command of this worker, or
// turn its mount step off, for its whole life.
func probeRun(ctx context.Context, b *bwrapSandbox, req Request) (Result, error) {
	res, err := b.run(ctx, req)
	for try := 1; err != nil && try < 3 && ctx.Err() == nil && errors.Is(err, errRetryRun); try++ {
		time.Sleep(time.Duration(try) * 100 * time.Millisecond)
		res, err = b.run(ctx, req)
	}
	return res, err
}

// guard is the host guard's share of c.
func (c Config) guard() hostguard.Settings {
	return hostguard.Settings{CacheDir: c.CacheDir, QuarantineDir: c.QuarantineDir, ScanEntries: c.HostScanEntries}
}
