package provision

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/toolchains"
)

// A uvx server (`uvx PACKAGE`, `uv tool run PACKAGE`) reads the host's uv
// cache through an overlay: uv writes the cache it reads (a lock at its
// root, the environments it links packages into), so the host's cache is
// the overlay's lower layer, bound read-only, and what uv writes lands in
// an upper layer of the server's own, kept between its starts beside its
// home (out of its reach, as its home's lock is):
//
//	mcp-homes/<server>/uv-cache/   lock (held while the server runs),
//	                               upper/, work/ (the overlay's layers)
//
// The sandbox mounts it with its mount step (CacheOverlay); where it
// cannot, the server has its home's own cache, as without a host cache.

// UVLayers is where a server's uv cache overlay keeps its layers, beside
// its home.
const UVLayers = "uv-cache"

// CacheOverlay is an overlay the sandbox mounts at At (a path in the
// sandbox): Lower, a host directory bound read-only at At, is its lower
// layer, and Layers, a host directory, holds its upper and work
// directories.
type CacheOverlay struct{ Lower, At, Layers string }

// RunsUV says whether argv runs uv's tool runner: uvx, or uv tool run.
func RunsUV(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	switch filepath.Base(argv[0]) {
	case "uvx":
		return true
	case "uv":
		return len(argv) > 2 && argv[1] == "tool" && argv[2] == "run"
	}
	return false
}

// uvCache is uv's cache directory: UV_CACHE_DIR, else $XDG_CACHE_HOME/uv,
// else ~/.cache/uv.
func uvCache(env HostEnv) string {
	if v := env.getenv("UV_CACHE_DIR"); filepath.IsAbs(v) {
		return v
	}
	if v := env.getenv("XDG_CACHE_HOME"); filepath.IsAbs(v) {
		return filepath.Join(v, "uv")
	}
	return filepath.Join(env.home(), ".cache", "uv")
}

// serverUVCache gives a uvx server the host's uv cache through an overlay
// (see above), when the host has one and no other run of the server holds
// its layers.
func (p *Provisioner) serverUVCache(pr *Provision, home string) error {
	if p == nil || p.Host.uvCache == "" {
		return nil
	}
	layers := filepath.Join(filepath.Dir(home), UVLayers)
	if err := os.MkdirAll(layers, 0o700); err != nil {
		return fmt.Errorf("sandbox: the server's uv cache: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(layers, "lock"), os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("sandbox: the server's uv cache: %w", err)
	}
	if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		lock.Close()
		pr.Skipped = append(pr.Skipped, HostPath{Tool: toolchains.Python, What: "uv cache", Path: p.Host.uvCache,
			Skip: "another run of this server has its overlay: it uses its home's own cache"})
		return nil
	}
	// The overlay is volatile (mountinit.go): its work directory is
	// emptied before each mount.
	work := filepath.Join(layers, "work")
	err = hostfs.RemoveAllWritable(work)
	if err == nil {
		err = os.MkdirAll(filepath.Join(layers, "upper"), 0o700)
	}
	if err == nil {
		err = os.Mkdir(work, 0o700)
	}
	if err == nil {
		err = plainDirs(home, ".cache", ".cache/uv")
	}
	if err != nil {
		lock.Close()
		return fmt.Errorf("sandbox: the server's uv cache: %w", err)
	}
	pr.CacheOverlay = &CacheOverlay{Lower: p.Host.uvCache, At: serverCache + "/uv", Layers: layers}
	pr.uvLock = lock
	return nil
}
