package sandbox

import "github.com/custos-dev/custos/sandbox/provision"

// Provisions says what a command in workspace ws would be given (what
// starter sandbox check prints), without running one: the toolchains
// found, the host's caches shown read-only (and those skipped, with why),
// the workspace's own caches and their size, the git identity. It creates,
// locks and writes nothing. The fallback backend provisions nothing (its
// commands run on the host), and says so.
func Provisions(sb Sandbox, ws string, req Request) ([]string, error) {
	b, ok := sb.(*bwrapSandbox)
	if !ok || b.prov == nil {
		return []string{"toolchains: not provisioned (no bubblewrap sandbox)"}, nil
	}
	pr, err := b.prov.PlanRun(ws, wantOf(req), true, nil)
	if err != nil {
		return nil, err
	}
	return pr.Lines(), nil
}

// CacheDir is where a sandbox of cfg keeps the workspace caches.
func CacheDir(cfg Config) (string, error) {
	if cfg.CacheDir != "" {
		return cfg.CacheDir, nil
	}
	return provision.DefaultCacheDir()
}

// WaitIdle waits for the sandbox's background work on its workspace caches
// (measuring and evicting after a run) and on its overlays (cleaning their
// work directories) to end: before a process exits, or a test removes the
// cache directory.
func WaitIdle(sb Sandbox) {
	b, ok := sb.(*bwrapSandbox)
	if !ok {
		return
	}
	if b.prov != nil && b.prov.Caches != nil {
		b.prov.Caches.Busy.Wait()
	}
	if b.overlays != nil {
		b.overlays.Busy.Wait()
	}
}

// wantOf is what req asks of the toolchains' provisioning.
func wantOf(req Request) provision.Want {
	return provision.Want{Toolchains: req.Toolchains, Set: req.ToolchainsSet, Network: req.Network}
}

// provisionerFor is the provisioner of a sandbox of cfg.
func provisionerFor(cfg Config) *provision.Provisioner {
	caches := provision.Caches{Bytes: cfg.CacheBytes}
	if root, err := CacheDir(cfg); err != nil {
		caches.Why = err.Error()
	} else {
		caches.Root = root
	}
	return provision.NewProvisioner(cfg.HostEnv, cfg.IdentityCache, caches)
}
