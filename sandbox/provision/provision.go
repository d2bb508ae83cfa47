package provision

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/custos-dev/custos/netpolicy"
	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/mount"
	"github.com/custos-dev/custos/sandbox/sysview"
	"github.com/custos-dev/custos/toolchains"
)

// Provisioner gives each run what its workspace's toolchains need (issue
// 16): the host's caches read-only, the workspace's own caches read-write,
// the user's git identity, and the environment that points the tools at
// them. One per sandbox; what it found of the host it keeps.
type Provisioner struct {
	Host   *hostToolchains
	Caches *wsCaches // nil: no usable cache directory (why says why)
	why    string
	git    *GitIdentity
}

// Caches is where a provisioner keeps the workspaces' own caches.
type Caches struct {
	// Root is the directory of every workspace's cache; "" with Why when
	// there is none (the caches are then each run's /tmp).
	Root, Why string
	// Bytes caps them all together (0: DefaultCacheBytes).
	Bytes int64
}

// NewProvisioner discovers the toolchains of the host (env) and keeps the
// user's git identity cached in identityCache.
func NewProvisioner(env HostEnv, identityCache string, caches Caches) *Provisioner {
	p := &Provisioner{Host: discoverHost(env), git: &GitIdentity{Env: env, Cache: identityCache}}
	if caches.Root == "" {
		p.why = caches.Why
		return p
	}
	capBytes := caches.Bytes
	if capBytes == 0 {
		capBytes = DefaultCacheBytes
	}
	p.Caches = newWSCaches(caches.Root, capBytes)
	return p
}

// Want is what a run asks of its provision: which toolchains (Set: only
// those in Toolchains, which may be none), and the network it may reach
// (a Go module proxy, a registry).
type Want struct {
	Toolchains []string
	Set        bool
	Network    netpolicy.Policy
}

// Provision is what one run gets.
type Provision struct {
	Detected []Detected
	// ReadOnly are the host paths bound read-only; Skipped those not, with why.
	ReadOnly, Skipped []HostPath
	// GoToolchain names the Go toolchain from the module cache the run
	// uses instead of the sandbox's go, when go.mod asks for a newer one.
	GoToolchain string
	// CacheDir is the workspace's cache directory on the host ("" when
	// none: CacheWhy says why, and the caches are the run's /tmp).
	CacheDir, CacheWhy string
	Git                string
	Mounts             []mount.Mount
	Env                map[string]string
	path               []string // PATH entries in front of the sandbox's
	base               string   // where the caches are inside the sandbox
	Cache              *wsCache
	// CacheOverlay, for a uvx server, is the host's uv cache under a layer
	// of its own (uvcache.go), held by uvLock until Release.
	CacheOverlay *CacheOverlay
	uvLock       *os.File
	dry          bool // a description: nothing created, locked or written
}

// Release ends the run's hold on its caches.
func (p *Provisioner) Release(pr *Provision) {
	if pr.Cache != nil && p.Caches != nil {
		p.Caches.release(pr.Cache)
		pr.Cache = nil
	}
	if pr.uvLock != nil {
		pr.uvLock.Close()
		pr.uvLock = nil
	}
}

// Plan works out the run's provision for workspace ws. Call release
// afterwards, also on error.
// dirs (may be nil) are the workspace's directory listings, as the
// host-config snapshot keeps them between commands.
func (p *Provisioner) Plan(ws string, want Want, dirs *hostfs.DirListings) (*Provision, error) {
	return p.PlanRun(ws, want, false, dirs)
}

// PlanRun is plan; dry describes without creating or locking anything
// (for reports: a job's first event, `sandbox check`).
func (p *Provisioner) PlanRun(ws string, want Want, dry bool, dirs *hostfs.DirListings) (*Provision, error) {
	pr := &Provision{Env: map[string]string{}, dry: dry}
	pr.Detected = detectToolchains(ws, want.Toolchains, want.Set, dirs)
	if err := p.workspaceCache(pr, ws); err != nil {
		return pr, err
	}
	offline := len(want.Network.AllowedDomains) == 0
	for _, d := range pr.Detected {
		switch d.Tool {
		case toolchains.Go:
			p.planGo(pr, ws, want.Network)
		case toolchains.Node:
			p.planNode(pr, offline)
		case toolchains.Python:
			p.planPython(pr, ws)
		case toolchains.Rust:
			p.planRust(pr, ws, offline)
		case toolchains.Java:
			p.planJava(pr, offline)
		}
	}
	for _, hp := range p.Host.paths {
		if hp.Skip != "" && hasTool(pr.Detected, hp.Tool) {
			pr.Skipped = append(pr.Skipped, hp)
		}
	}
	p.planGit(pr)
	p.finish(pr)
	if len(pr.path) > 0 {
		pr.Env["PATH"] = strings.Join(pr.path, ":") + ":" + sysview.Path
	}
	return pr, nil
}

// workspaceCache opens ws's caches and points every tool's cache variable
// into them (whether or not the toolchain was detected: a project can
// start in an empty workspace). Without a usable cache directory the run
// still goes on, its caches in its own /tmp, and the provision says why.
func (p *Provisioner) workspaceCache(pr *Provision, ws string) error {
	base := sysview.Tmp
	switch {
	case p.Caches == nil:
		pr.CacheWhy = p.why
	case pr.dry:
		dir := CacheDirFor(p.Caches.root, ws)
		if why := ownDir(dir); why == "" {
			pr.CacheDir, base = dir, CacheInside
		} else if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			pr.CacheDir, base = dir, CacheInside
			pr.CacheWhy = "not made yet: the workspace's first command makes it"
		} else {
			pr.CacheWhy = fmt.Sprintf("workspace cache %s %s: not used", dir, why)
		}
	default:
		c, err := p.Caches.open(ws)
		if errors.Is(err, syscall.ENOSPC) {
			return err
		}
		if err != nil {
			pr.CacheWhy = err.Error()
			break
		}
		pr.Cache, pr.CacheDir, base = c, c.dir, CacheInside
		pr.Mounts = append(pr.Mounts, mount.Mount{Kind: mount.Bind, Src: filepath.Join(c.dir, "cache"), Dst: CacheInside})
	}
	for k, sub := range map[string]string{
		"GOCACHE": "go-build", "GOMODCACHE": "go-mod", "GOPATH": "go-path",
		"npm_config_cache": "npm", "npm_config_logs_dir": "npm-logs",
		"PIP_CACHE_DIR": "pip", "CARGO_HOME": "cargo",
	} {
		pr.Env[k] = base + "/" + sub
	}
	pr.base = base
	pr.Env["npm_config_update_notifier"] = "false"
	// No module source unless planGo finds one: the go command must not
	// try a network that is not there.
	pr.Env["GOPROXY"] = "off"
	return nil
}

// ReadOnly binds a vetted host path read-only at its own path.
func (pr *Provision) readOnly(tool, what, path string) {
	pr.readOnlyAt(tool, what, path, path)
}

// readOnlyAt binds a vetted host path read-only at the sandbox path at.
func (pr *Provision) readOnlyAt(tool, what, path, at string) {
	pr.Mounts = append(pr.Mounts, mount.Mount{Kind: mount.ROBind, Src: path, Dst: at})
	hp := HostPath{Tool: tool, What: what, Path: path}
	if at != path {
		hp.At = at
	}
	pr.ReadOnly = append(pr.ReadOnly, hp)
}

// SandboxPath is where the sandbox shows the host path hp.
func (hp HostPath) SandboxPath() string {
	if hp.At != "" {
		return hp.At
	}
	return hp.Path
}

// planGo: modules come from the host's module cache as a file:// proxy
// (extracted into the workspace's own GOMODCACHE, so the host's is never
// written), then from the network when a Go module proxy is allowed; a
// go.mod asking for a newer Go gets that toolchain from the module cache.
func (p *Provisioner) planGo(pr *Provision, ws string, n netpolicy.Policy) {
	var proxies []string
	if d := p.Host.goDownload; d != "" {
		pr.readOnly(toolchains.Go, "Go module cache", d)
		proxies = append(proxies, (&url.URL{Scheme: "file", Path: d}).String())
	}
	online := n.Allows("proxy.golang.org")
	if online {
		proxies = append(proxies, "https://proxy.golang.org")
	}
	if len(proxies) > 0 {
		pr.Env["GOPROXY"] = strings.Join(proxies, ",")
	}
	if !online || !n.Allows("sum.golang.org") {
		// Every module in the host's cache was verified by the host's go
		// when it was downloaded, and go.sum still checks each one; the
		// checksum database is out of reach.
		pr.Env["GOSUMDB"] = "off"
	}
	if want, ok := goModRequires(ws); ok {
		if t := p.Host.pickGoToolchain(want); t != nil {
			pr.readOnly(toolchains.Go, "Go toolchain "+t.Name, t.Dir)
			pr.GoToolchain = t.Name
			pr.path = append(pr.path, t.Dir+"/bin")
		}
	}
	pr.path = append(pr.path, pr.Env["GOPATH"]+"/bin")
}

// planNode: offline, npm reads the host's cache, read-only, and never
// tries the network; with domains allowed it downloads into the
// workspace's own cache.
func (p *Provisioner) planNode(pr *Provision, offline bool) {
	if offline && p.Host.npmCache != "" {
		pr.readOnly(toolchains.Node, "npm cache", filepath.Join(p.Host.npmCache, "_cacache"))
		pr.Env["npm_config_cache"] = p.Host.npmCache
		pr.Env["npm_config_offline"] = "true"
	}
}

// planPython: pip's cache is the workspace's own (pip cannot read a cache
// it may not write); a virtual environment in the workspace gets the
// Python it was made from, read-only, when that lives outside the system
// directories (pyenv, a user install).
func (p *Provisioner) planPython(pr *Provision, ws string) {
	for _, venv := range []string{".venv", "venv", "env"} {
		home := readKeyValues(filepath.Join(ws, venv, "pyvenv.cfg"), "=")["home"]
		if !filepath.IsAbs(home) || systemPath(home) {
			continue
		}
		prefix := filepath.Dir(filepath.Clean(home)) // .../versions/3.11.7 from .../bin
		real, skip := vetHostPath(prefix, p.Host.home, p.Host.creds)
		if skip != "" {
			pr.Skipped = append(pr.Skipped, HostPath{Tool: toolchains.Python, What: "Python of " + venv, Path: prefix, Skip: skip})
			continue
		}
		if real != "" {
			pr.readOnly(toolchains.Python, "Python of "+venv, real)
		}
		return
	}
}

// systemPath reports whether p is already visible in every sandbox.
func systemPath(p string) bool {
	for _, r := range sysview.RootEntries {
		if hostfs.Inside(r, p) {
			return true
		}
	}
	return false
}

// planRust: cargo and rustc come from the user's rustup toolchain (the
// workspace's rust-toolchain file, else the default), read-only; offline,
// cargo reads the host's registry and git databases, read-only, inside the
// workspace's own CARGO_HOME.
func (p *Provisioner) planRust(pr *Provision, ws string, offline bool) {
	if name, dir := p.Host.PickRust(ws); dir != "" {
		pr.readOnly(toolchains.Rust, "rust toolchain "+name, dir)
		pr.path = append(pr.path, dir+"/bin")
	}
	if !offline || p.Host.cargoHome == "" {
		return
	}
	for _, sub := range cargoShared {
		src := p.Host.usable(toolchains.Rust, "cargo "+sub)
		if src == "" {
			continue
		}
		pr.readOnlyAt(toolchains.Rust, "cargo "+sub, src, pr.Env["CARGO_HOME"]+"/"+sub)
	}
	pr.Env["CARGO_NET_OFFLINE"] = "true"
}

// planJava: offline, Maven reads the host's local repository read-only.
func (p *Provisioner) planJava(pr *Provision, offline bool) {
	if !offline || p.Host.mavenRepo == "" {
		pr.Env["MAVEN_OPTS"] = "-Dmaven.repo.local=" + pr.base + "/m2"
		return
	}
	pr.readOnly(toolchains.Java, "Maven repository", p.Host.mavenRepo)
	pr.Env["MAVEN_OPTS"] = "-Dmaven.repo.local=" + p.Host.mavenRepo
}

// planGit gives git the user's identity and nothing else of theirs.
func (p *Provisioner) planGit(pr *Provision) {
	pr.Env["GIT_CONFIG_NOSYSTEM"] = "1"
	name, email := p.git.Get()
	if name == "" && email == "" {
		pr.Git = "none (no user.name or user.email in the user's git configuration)"
		return
	}
	pr.Git = fmt.Sprintf("%s <%s>", name, email)
	if pr.CacheDir == "" {
		// No directory of ours to keep the file in: the variables git
		// reads before its configuration carry the identity.
		for _, who := range []string{"AUTHOR", "COMMITTER"} {
			pr.Env["GIT_"+who+"_NAME"], pr.Env["GIT_"+who+"_EMAIL"] = name, email
		}
		return
	}
	f := filepath.Join(pr.CacheDir, "gitconfig")
	if pr.dry {
		return
	}
	if err := hostfs.WriteIfChanged(f, gitconfigText(name, email)); err != nil {
		return
	}
	pr.Mounts = append(pr.Mounts, mount.Mount{Kind: mount.ROBind, Src: f, Dst: sysview.Home + "/.gitconfig"})
}

// finish appends the credential masks that fall inside what the run
// mounts, at the place the sandbox shows them, last, so they cover it.
func (p *Provisioner) finish(pr *Provision) {
	for _, ro := range pr.ReadOnly {
		for _, m := range p.Host.masksIn(ro.Path) {
			if rel, ok := hostfs.Within(ro.Path, m.Dst); ok {
				m.Dst = filepath.Join(ro.SandboxPath(), rel)
				pr.Mounts = append(pr.Mounts, m)
			}
		}
	}
}

// Lines describe the provision for people, one thing a line.
func (pr *Provision) Lines() []string {
	var out []string
	if len(pr.Detected) == 0 {
		out = append(out, "toolchains: none found in the workspace")
	} else {
		var ts []string
		for _, d := range pr.Detected {
			ts = append(ts, d.Tool+" ("+d.Marker+")")
		}
		out = append(out, "toolchains: "+strings.Join(ts, ", "))
	}
	for _, h := range pr.ReadOnly {
		at := ""
		if h.At != "" {
			at = " (at " + h.At + ")"
		}
		out = append(out, fmt.Sprintf("read-only from the host: %s %s%s", h.What, h.Path, at))
	}
	for _, h := range pr.Skipped {
		out = append(out, fmt.Sprintf("not mounted: %s %s %s", h.What, h.Path, h.Skip))
	}
	if pr.GoToolchain != "" {
		out = append(out, "go: "+pr.GoToolchain+" from the module cache (go.mod asks for it)")
	}
	switch {
	case pr.CacheDir != "" && pr.CacheWhy != "":
		out = append(out, fmt.Sprintf("workspace caches: %s (read-write, this workspace only; %s)", filepath.Join(pr.CacheDir, "cache"), pr.CacheWhy))
	case pr.CacheDir != "":
		size := readInfo(pr.CacheDir).Bytes
		out = append(out, fmt.Sprintf("workspace caches: %s (read-write, this workspace only; %s as last measured)", filepath.Join(pr.CacheDir, "cache"), FormatBytes(size)))
	default:
		out = append(out, "workspace caches: none kept, each command starts cold in its /tmp: "+pr.CacheWhy)
	}
	out = append(out, "git identity: "+pr.Git)
	return out
}

// FormatBytes is n in B, KiB, MiB, GiB or TiB, for people.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= unit
		suffix = s
		if v < unit {
			break
		}
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}
