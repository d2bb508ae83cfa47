package provision

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/mount"
	"github.com/custos-dev/custos/sandbox/sysview"
	"github.com/custos-dev/custos/toolchains"
)

// The host's dependency caches, found once when the sandbox starts: where
// each toolchain keeps what it downloaded, as the worker user configured it
// (GOMODCACHE, npm's cache, CARGO_HOME, maven.repo.local, …), checked, and
// bound read-only into the sandboxes of the workspaces that use that
// toolchain. Read-only, because a poisoned module or build cache would hand
// the user's next build on the host the attacker's code; never what sits
// beside them (tokens, keys, cloud configuration), which credentialPaths
// names and credentialMasks hides even inside a cache.

// HostEnv is where the sandbox reads the worker user's toolchain
// configuration. The zero value reads the worker's own home and
// environment; tests give a home and variables of their own.
type HostEnv struct {
	// Home is the user's home directory ("" = os.UserHomeDir).
	Home string
	// Getenv reads the user's environment (nil = os.Getenv).
	Getenv func(string) string
}

func (h HostEnv) home() string {
	if h.Home != "" {
		return h.Home
	}
	home, _ := os.UserHomeDir()
	return home
}

func (h HostEnv) getenv(k string) string {
	if h.Getenv != nil {
		return h.Getenv(k)
	}
	return os.Getenv(k)
}

// xdg is $name when absolute, else home/def.
func (h HostEnv) xdg(name, def string) string {
	if v := h.getenv(name); filepath.IsAbs(v) {
		return v
	}
	return filepath.Join(h.home(), def)
}

// HostPath is a host path the sandbox shows (or would show) a toolchain,
// read-only at the same path.
type HostPath struct {
	Tool string `json:"tool"`
	// What it is, for people: "Go module cache", "npm cache", ….
	What string `json:"what"`
	Path string `json:"path"`
	// At is where the sandbox shows it, when not at Path.
	At string `json:"at,omitempty"`
	// Skip, when set, says why the path is not mounted.
	Skip string `json:"skip,omitempty"`
}

// hostToolchains is what New found of the host's toolchains.
type hostToolchains struct {
	// paths are the caches found, vetted (Skip says why one is not used).
	paths []HostPath
	// goDownload is GOMODCACHE/cache/download, the source of the sandbox's
	// file:// module proxy ("" when unusable).
	goDownload string
	// GoToolchains are the Go toolchains in the module cache (what
	// GOTOOLCHAIN would switch to), and localGo the version of the go
	// command on the sandbox's PATH.
	GoToolchains []goToolchain
	LocalGo      goVersion
	LocalGoOK    bool
	npmCache     string // npm's cache directory (its _cacache is mounted)
	uvCache      string // uv's cache directory (a uvx server's overlay's lower layer)
	cargoHome    string // CARGO_HOME, whose registry and git db are mounted
	// rustup are the rustup toolchains (name → directory), and
	// rustDefault the default one: cargo and rustc come from there when
	// the user's are rustup's (~/.cargo/bin holds only rustup's proxies).
	rustup      map[string]string
	rustDefault string
	mavenRepo   string // the Maven local repository
	// Home is the user's home directory, creds their credential paths
	// (credentialPaths).
	home  string
	creds []string
	// masks caches, per mounted path, what hides the credential files in
	// it (credentialMasks): found the first time a run mounts the path, so
	// a sandbox that never mounts a toolchain never walks it.
	maskMu sync.Mutex
	masks  map[string][]mount.Mount
}

// masksIn are the credential masks inside the host path dir.
func (h *hostToolchains) masksIn(dir string) []mount.Mount {
	h.maskMu.Lock()
	defer h.maskMu.Unlock()
	if m, ok := h.masks[dir]; ok {
		return m
	}
	if h.masks == nil {
		h.masks = map[string][]mount.Mount{}
	}
	m := credentialMasks([]string{dir}, h.creds)
	h.masks[dir] = m
	return m
}

// GoToolchain is a Go toolchain module extracted in the module cache.
type goToolchain struct {
	Version goVersion
	Name    string // "go1.27.3"
	Dir     string // its GOROOT
}

// usable reports the vetted path of tool and what, or "".
func (h *hostToolchains) usable(tool, what string) string {
	for _, p := range h.paths {
		if p.Tool == tool && p.What == what && p.Skip == "" {
			return p.Path
		}
	}
	return ""
}

// discoverHost finds and vets the host's toolchain caches.
func discoverHost(env HostEnv) *hostToolchains {
	h := &hostToolchains{}
	home := env.home()
	creds := credentialPaths(env)
	add := func(tool, what, path string) string {
		if path == "" {
			return ""
		}
		real, skip := vetHostPath(path, home, creds)
		if real == "" && skip == "" {
			return "" // not there: nothing to say
		}
		p := HostPath{Tool: tool, What: what, Path: path, Skip: skip}
		if skip == "" {
			p.Path = real
		}
		h.paths = append(h.paths, p)
		if skip != "" {
			return ""
		}
		return real
	}

	if mod := goModCache(env); mod != "" {
		h.goDownload = add(toolchains.Go, "Go module cache", filepath.Join(mod, "cache", "download"))
		if h.goDownload != "" {
			h.GoToolchains = findGoToolchains(mod, home, creds)
		}
	}
	h.LocalGo, h.LocalGoOK = sandboxGoVersion()
	if c := npmCache(env); c != "" {
		if add(toolchains.Node, "npm cache", filepath.Join(c, "_cacache")) != "" {
			h.npmCache = filepath.Clean(c)
		}
	}
	// Vetted as the others, but no workspace run's (only a uvx server's).
	h.uvCache, _ = vetHostPath(uvCache(env), home, creds)
	cargo := env.getenv("CARGO_HOME")
	if !filepath.IsAbs(cargo) {
		cargo = filepath.Join(home, ".cargo")
	}
	for _, sub := range cargoShared {
		if add(toolchains.Rust, "cargo "+sub, filepath.Join(cargo, sub)) != "" {
			h.cargoHome = cargo
		}
	}
	h.rustup, h.rustDefault = rustupToolchains(env, home, creds)
	h.mavenRepo = add(toolchains.Java, "Maven repository", mavenRepo(env))
	h.home, h.creds = home, creds
	return h
}

// cargoShared are the parts of CARGO_HOME a build reads: the registry
// index and downloaded crates, and git dependencies' databases.
var cargoShared = []string{"registry/index", "registry/cache", "git/db"}

// rustupToolchains lists rustup's installed toolchains, vetted, and its
// default (RUSTUP_HOME, else ~/.rustup; settings.toml's default_toolchain).
func rustupToolchains(env HostEnv, home string, creds []string) (map[string]string, string) {
	root := env.getenv("RUSTUP_HOME")
	if !filepath.IsAbs(root) {
		root = filepath.Join(home, ".rustup")
	}
	ents, err := os.ReadDir(filepath.Join(root, "toolchains"))
	if err != nil {
		return nil, ""
	}
	out := map[string]string{}
	for _, e := range ents {
		dir := filepath.Join(root, "toolchains", e.Name())
		if _, err := os.Stat(filepath.Join(dir, "bin", "cargo")); err != nil {
			continue
		}
		if real, skip := vetHostPath(dir, home, creds); real != "" && skip == "" {
			out[e.Name()] = real
		}
	}
	def := readKeyValues(filepath.Join(root, "settings.toml"), "=")["default_toolchain"]
	return out, def
}

// rustTriple is this platform's host triple, as rustup names toolchains.
func rustTriple() string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686", "riscv64": "riscv64gc"}[runtime.GOARCH]
	return arch + "-unknown-linux-gnu"
}

// PickRust is the rustup toolchain for workspace ws: its rust-toolchain
// file's channel (rust-toolchain.toml or the plain file), else the
// default; "" when that toolchain is not installed.
func (h *hostToolchains) PickRust(ws string) (name, dir string) {
	want := h.rustDefault
	if ch := readKeyValues(filepath.Join(ws, "rust-toolchain.toml"), "=")["channel"]; ch != "" {
		want = ch
	} else if b, err := os.ReadFile(filepath.Join(ws, "rust-toolchain")); err == nil {
		if line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n"); line != "" && !strings.Contains(line, "=") {
			want = strings.TrimSpace(line)
		}
	}
	for _, n := range []string{want, want + "-" + rustTriple()} {
		if d, ok := h.rustup[n]; ok && want != "" {
			return n, d
		}
	}
	return "", ""
}

// vetHostPath checks a cache directory before it is shown to a sandbox. It
// returns its real path, or why it is not used; ("", "") means it does not
// exist. A cache must be a directory of its own: not a symbolic link (whose
// target may change under us), owned by the worker's user, not writable by
// others (anyone could plant code in it), not holding the home directory
// and not inside a credential path. (Credential files inside a cache are
// masked: credentialMasks.)
func vetHostPath(path, home string, creds []string) (real, skip string) {
	path = filepath.Clean(path)
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return "", ""
	case fi.Mode()&fs.ModeSymlink != 0:
		t, _ := os.Readlink(path)
		return "", fmt.Sprintf("is a symbolic link to %s, not followed", t)
	case !fi.IsDir():
		return "", "is not a directory"
	}
	if why := hostfs.OwnedByUser(fi); why != "" {
		return "", why
	}
	if real, err = filepath.EvalSymlinks(path); err != nil {
		return "", fmt.Sprintf("cannot be resolved: %v", err)
	}
	if rhome, err := filepath.EvalSymlinks(home); err == nil && hostfs.Inside(real, rhome) {
		return "", fmt.Sprintf("resolves to %s, which holds the home directory", real)
	}
	for _, c := range creds {
		rc := c
		if r, err := filepath.EvalSymlinks(c); err == nil {
			rc = r
		}
		if hostfs.Inside(rc, real) {
			return "", fmt.Sprintf("resolves to %s, inside the credential path %s", real, c)
		}
	}
	return real, ""
}

// credentialPaths are the files and directories of the user's that hold
// secrets for the tools the sandbox serves, and the usual cloud and git
// credentials, in their configured and default places.
func credentialPaths(env HostEnv) []string {
	home := env.home()
	cfg := env.xdg("XDG_CONFIG_HOME", ".config")
	cargo := env.getenv("CARGO_HOME")
	if !filepath.IsAbs(cargo) {
		cargo = filepath.Join(home, ".cargo")
	}
	out := []string{
		filepath.Join(home, ".npmrc"), filepath.Join(home, ".yarnrc"), filepath.Join(home, ".yarnrc.yml"),
		filepath.Join(cargo, "credentials"), filepath.Join(cargo, "credentials.toml"),
		filepath.Join(home, ".m2", "settings.xml"), filepath.Join(home, ".m2", "settings-security.xml"),
		filepath.Join(home, ".netrc"), filepath.Join(home, "_netrc"),
		filepath.Join(home, ".git-credentials"), filepath.Join(cfg, "git", "credentials"),
		filepath.Join(home, ".docker"), filepath.Join(cfg, "gh"), filepath.Join(cfg, "hub"),
		filepath.Join(home, ".ssh"), filepath.Join(home, ".gnupg"),
		filepath.Join(home, ".aws"), filepath.Join(cfg, "gcloud"), filepath.Join(home, ".azure"),
		filepath.Join(home, ".kube"), filepath.Join(home, ".pypirc"), filepath.Join(cfg, "pip"),
		filepath.Join(home, ".pip"), filepath.Join(home, ".gradle", "gradle.properties"),
		filepath.Join(home, ".vault-token"), filepath.Join(home, ".terraform.d"),
	}
	for _, v := range []string{"NPM_CONFIG_USERCONFIG", "npm_config_userconfig", "NETRC", "DOCKER_CONFIG",
		"AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "CLOUDSDK_CONFIG", "AZURE_CONFIG_DIR",
		"KUBECONFIG", "GH_CONFIG_DIR", "GIT_CONFIG_GLOBAL", "GOOGLE_APPLICATION_CREDENTIALS"} {
		if p := env.getenv(v); filepath.IsAbs(p) {
			out = append(out, filepath.Clean(p))
		}
	}
	return out
}

// credentialNames are base names that hold secrets wherever they are: a
// mounted cache holding one has it hidden.
var credentialNames = map[string]bool{
	".npmrc": true, ".yarnrc": true, ".yarnrc.yml": true, ".netrc": true, "_netrc": true,
	".git-credentials": true, "credentials": true, "credentials.toml": true,
	"settings.xml": true, "settings-security.xml": true, ".pypirc": true, "pip.conf": true,
	".ssh": true, ".gnupg": true, ".aws": true, ".azure": true, ".kube": true, ".docker": true,
	".vault-token": true, "gradle.properties": true, ".gitconfig": true,
	"id_rsa": true, "id_dsa": true, "id_ecdsa": true, "id_ed25519": true,
}

// credentialScanDepth bounds the search for credential names in a mounted
// cache: the caches' own entries are content-addressed or module-path
// named, so a credential file in one was put there, near its top.
const credentialScanDepth = 3

// credentialMasks hides, inside the mounted paths, every credential path
// and every file or directory named like one (to credentialScanDepth
// levels): a file is covered by an empty read-only file, a directory by an
// empty directory of the sandbox's own. Symbolic links need no mask: inside the
// sandbox they resolve in the sandbox's own view, where nothing of the home
// directory exists.
func credentialMasks(mounted, creds []string) []mount.Mount {
	var out []mount.Mount
	seen := map[string]bool{}
	mask := func(p string, dir bool) {
		if seen[p] {
			return
		}
		seen[p] = true
		if dir {
			out = append(out, mount.Mount{Kind: mount.Empty, Dst: p})
		} else {
			out = append(out, mount.Mount{Kind: mount.ROBind, Src: os.DevNull, Dst: p})
		}
	}
	for _, m := range mounted {
		for _, c := range creds {
			if fi, err := os.Lstat(c); err == nil && hostfs.Inside(m, c) && fi.Mode()&fs.ModeSymlink == 0 {
				mask(c, fi.IsDir())
			}
		}
		base := strings.Count(m, "/")
		_ = filepath.WalkDir(m, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && strings.Count(p, "/")-base >= credentialScanDepth {
				return fs.SkipDir
			}
			if p != m && credentialNames[d.Name()] && d.Type()&fs.ModeSymlink == 0 {
				mask(p, d.IsDir())
				if d.IsDir() {
					return fs.SkipDir
				}
			}
			return nil
		})
	}
	slices.SortFunc(out, func(a, b mount.Mount) int { return strings.Compare(a.Dst, b.Dst) })
	return out
}

// goModCache is GOMODCACHE as the go command would find it: the variable,
// the go env file, else the first GOPATH entry's pkg/mod (GOPATH: the
// variable, the env file, else ~/go).
func goModCache(env HostEnv) string {
	file := goEnvFile(env)
	get := func(k string) string {
		if v := env.getenv(k); v != "" {
			return v
		}
		return file[k]
	}
	if m := get("GOMODCACHE"); filepath.IsAbs(m) {
		return filepath.Clean(m)
	}
	gopath := get("GOPATH")
	if gopath == "" {
		gopath = filepath.Join(env.home(), "go")
	}
	first, _, _ := strings.Cut(gopath, string(os.PathListSeparator))
	if !filepath.IsAbs(first) {
		return ""
	}
	return filepath.Join(first, "pkg", "mod")
}

// goEnvFile reads the go command's own settings file (`go env -w`):
// $GOENV, else os.UserConfigDir()/go/env; GOENV=off means none.
func goEnvFile(env HostEnv) map[string]string {
	path := env.getenv("GOENV")
	if path == "off" {
		return nil
	}
	if path == "" {
		path = filepath.Join(env.xdg("XDG_CONFIG_HOME", ".config"), "go", "env")
	}
	return readKeyValues(path, "=")
}

// readKeyValues reads "key SEP value" lines (# and ; comments), as go's env
// file and npm's ini files are written; a missing file is empty.
func readKeyValues(path, sep string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, sep)
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		out[strings.TrimSpace(k)] = v
	}
	return out
}

// findGoToolchains lists the Go toolchains extracted in the module cache
// for this platform, vetted like a cache.
func findGoToolchains(mod, home string, creds []string) []goToolchain {
	suffix := "." + runtime.GOOS + "-" + runtime.GOARCH
	matches, _ := filepath.Glob(filepath.Join(mod, "golang.org", "toolchain@v0.0.1-go*"+suffix))
	var out []goToolchain
	for _, m := range matches {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "toolchain@v0.0.1-"), suffix)
		v, ok := parseGoVersion(name)
		if !ok {
			continue
		}
		if _, err := os.Stat(filepath.Join(m, "bin", "go")); err != nil {
			continue // a partial extraction
		}
		if real, skip := vetHostPath(m, home, creds); real != "" && skip == "" {
			out = append(out, goToolchain{Version: v, Name: name, Dir: real})
		}
	}
	slices.SortFunc(out, func(a, b goToolchain) int {
		if a.Version.Less(b.Version) {
			return -1
		}
		if b.Version.Less(a.Version) {
			return 1
		}
		return 0
	})
	return out
}

// sandboxGoVersion is the version of the go command first on the sandbox's
// PATH, from its GOROOT's VERSION file.
func sandboxGoVersion() (goVersion, bool) {
	for _, dir := range strings.Split(sysview.Path, ":") {
		bin, err := filepath.EvalSymlinks(filepath.Join(dir, "go"))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(bin)), "VERSION"))
		if err != nil {
			return goVersion{}, false
		}
		first, _, _ := strings.Cut(string(b), "\n")
		return parseGoVersion(first)
	}
	return goVersion{}, false
}

// pickGoToolchain is the toolchain a workspace needing want gets: none when
// the sandbox's go is new enough, else the oldest in the module cache that
// is (the go command would download exactly want; offline, the nearest
// newer release already here is what can run).
func (h *hostToolchains) pickGoToolchain(want goVersion) *goToolchain {
	if h.LocalGoOK && !h.LocalGo.Less(want) {
		return nil
	}
	for i := range h.GoToolchains {
		if !h.GoToolchains[i].Version.Less(want) {
			return &h.GoToolchains[i]
		}
	}
	return nil
}

// npmCache is npm's cache directory: npm_config_cache, the user's .npmrc
// cache= line, else ~/.npm.
func npmCache(env HostEnv) string {
	for _, k := range []string{"npm_config_cache", "NPM_CONFIG_CACHE"} {
		if v := env.getenv(k); filepath.IsAbs(v) {
			return v
		}
	}
	rc := env.getenv("NPM_CONFIG_USERCONFIG")
	if rc == "" {
		rc = env.getenv("npm_config_userconfig")
	}
	if rc == "" {
		rc = filepath.Join(env.home(), ".npmrc")
	}
	if v := readKeyValues(rc, "=")["cache"]; v != "" {
		v = strings.Replace(v, "~", env.home(), 1)
		if filepath.IsAbs(v) {
			return v
		}
	}
	return filepath.Join(env.home(), ".npm")
}

// mavenRepo is Maven's local repository: settings.xml's localRepository,
// else ~/.m2/repository. (settings.xml itself is never mounted.)
func mavenRepo(env HostEnv) string {
	b, err := os.ReadFile(filepath.Join(env.home(), ".m2", "settings.xml"))
	if err == nil {
		s := string(b)
		if i := strings.Index(s, "<localRepository>"); i >= 0 {
			rest := s[i+len("<localRepository>"):]
			if j := strings.Index(rest, "</localRepository>"); j >= 0 {
				v := strings.TrimSpace(rest[:j])
				v = strings.ReplaceAll(v, "${user.home}", env.home())
				if filepath.IsAbs(v) {
					return v
				}
			}
		}
	}
	return filepath.Join(env.home(), ".m2", "repository")
}
