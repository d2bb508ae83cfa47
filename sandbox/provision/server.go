package provision

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/custos-dev/custos/netpolicy"
	"github.com/custos-dev/custos/sandbox/mount"
	"github.com/custos-dev/custos/sandbox/sysview"
	"github.com/custos-dev/custos/toolchains"
)

// A server's home (an MCP server's, issue 42) is a directory of custos'
// state that the server alone writes: bound read-write at the sandbox's
// home, it holds the server's HOME, XDG directories, temporary files and
// caches, and nothing else of the host is writable. The host's npm cache
// is read as Bash reads it, never written: npm must rewrite the index
// buckets it reads (cacache compacts each one it looks up), so the index
// is copied into the home and only the content, which npm never rewrites,
// is the host's, bound read-only.

// Where a server's directories are, inside the sandbox.
const (
	serverNpm      = sysview.Home + "/.npm"
	serverTmp      = sysview.Home + "/.tmp"
	serverCache    = sysview.Home + "/.cache"
	serverData     = sysview.Home + "/.local/share"
	serverState    = sysview.Home + "/.local/state"
	serverConfig   = sysview.Home + "/.config"
	npmRegistry    = "registry.npmjs.org"
	pypiIndex      = "pypi.org"
	pypiFiles      = "files.pythonhosted.org"
	npmIndexSubdir = "_cacache/index-v5"
)

// ServerTmp is where a server's TMPDIR is, relative to its home; the
// caller empties it before each start.
const ServerTmp = ".tmp"

// PlanServer is the provision of a server whose home is the host
// directory home: the home read-write at the sandbox's home, every tool's
// cache inside it, and, offline, the host's npm cache as npx reads it (see
// above). n is the network the server may reach: with the npm registry
// (or PyPI) among its domains, npm (or uv) downloads into the home's own
// cache through the egress proxy. A server whose argv runs uvx reads the
// host's uv cache through an overlay (uvcache.go). p may be nil (no host
// caches then).
func (p *Provisioner) PlanServer(home string, n netpolicy.Policy, argv []string) (*Provision, error) {
	if !filepath.IsAbs(home) {
		return nil, fmt.Errorf("sandbox: a server's home %q is not an absolute path", home)
	}
	if fi, err := os.Lstat(home); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("sandbox: a server's home %s is not a directory", home)
	}
	pr := &Provision{Env: map[string]string{}, base: serverCache, CacheWhy: "a server's own home"}
	pr.Mounts = append(pr.Mounts, mount.Mount{Kind: mount.Bind, Src: home, Dst: sysview.Home})
	for k, v := range map[string]string{
		"TMPDIR": serverTmp, "XDG_CONFIG_HOME": serverConfig, "XDG_DATA_HOME": serverData,
		"XDG_CACHE_HOME": serverCache, "XDG_STATE_HOME": serverState,
		"GOCACHE": serverCache + "/go-build", "GOPATH": sysview.Home + "/go",
		"npm_config_cache": serverNpm, "npm_config_update_notifier": "false",
		// npm's global packages are the server's own (npx then installs
		// into its home, never runs the host's global copy, which cannot
		// write beside itself).
		"npm_config_prefix": sysview.Home + "/.local",
		"PIP_CACHE_DIR":     serverCache + "/pip", "UV_CACHE_DIR": serverCache + "/uv",
		"GOPROXY": "off",
	} {
		pr.Env[k] = v
	}
	if !n.Allows(npmRegistry) {
		pr.Env["npm_config_offline"] = "true"
		if err := p.serverNpmCache(pr, home); err != nil {
			return nil, err
		}
	}
	if !n.Allows(pypiIndex) || !n.Allows(pypiFiles) {
		pr.Env["UV_OFFLINE"] = "1"
	}
	if RunsUV(argv) {
		if err := p.serverUVCache(pr, home); err != nil {
			return nil, err
		}
	}
	if p != nil {
		p.finish(pr)
	}
	return pr, nil
}

// serverNpmCache gives an offline server the host's npm cache: its index
// copied into the home's npm cache (what changed since the last start),
// its content bound read-only there.
func (p *Provisioner) serverNpmCache(pr *Provision, home string) error {
	if p == nil || p.Host.npmCache == "" {
		return nil
	}
	host := filepath.Join(p.Host.npmCache, "_cacache")
	if _, err := os.Stat(filepath.Join(host, "content-v2")); err != nil {
		return nil // an empty cache: nothing to give
	}
	if err := plainDirs(home, ".npm", ".npm/_cacache", ".npm/_cacache/index-v5", ".npm/_cacache/content-v2"); err != nil {
		return fmt.Errorf("sandbox: the server's npm cache: %w", err)
	}
	if err := SeedDir(filepath.Join(host, "index-v5"), home, filepath.Join(".npm", npmIndexSubdir)); err != nil {
		return fmt.Errorf("sandbox: the server's npm index: %w", err)
	}
	pr.readOnlyAt(toolchains.Node, "npm cache content", filepath.Join(host, "content-v2"), serverNpm+"/_cacache/content-v2")
	return nil
}

// SeedDir copies the tree src into dst, a path relative to the directory
// home that the server controls: every step inside home goes through an
// os.Root, so nothing the server planted there (a link to a host path)
// leads the copy out of it. A file already there with src's size and a
// modification time not older than src's is left as it is. Links and
// special files in src are skipped.
func SeedDir(src, home, dst string) error {
	root, err := os.OpenRoot(home)
	if err != nil {
		return err
	}
	defer root.Close()
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return root.MkdirAll(to, 0o700)
		case !d.Type().IsRegular():
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if have, err := root.Lstat(to); err == nil && have.Mode().IsRegular() && have.Size() == fi.Size() && !have.ModTime().Before(fi.ModTime()) {
			return nil
		}
		return seedFile(root, path, to, fi)
	})
}

// seedFile copies the host file from to the root's path to (replacing
// whatever is there, a link included) with from's modification time.
func seedFile(root *os.Root, from, to string, fi fs.FileInfo) error {
	in, err := os.Open(from)
	if err != nil {
		return nil // gone or unreadable: npm will not find that entry
	}
	defer in.Close()
	tmp := to + ".custos-seed"
	_ = root.Remove(tmp)
	out, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Chtimes(tmp, fi.ModTime(), fi.ModTime())
	}
	if err == nil {
		err = root.Rename(tmp, to)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// plainDirs makes each of dirs (relative to home, parents first) a
// directory of its own: a link the server left in their place is removed,
// so that neither the seeding nor a mount goes where it points.
func plainDirs(home string, dirs ...string) error {
	root, err := os.OpenRoot(home)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, d := range dirs {
		fi, err := root.Lstat(d)
		if err == nil && fi.IsDir() {
			continue
		}
		if err == nil {
			if err := root.Remove(d); err != nil {
				return err
			}
		}
		if err := root.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}
