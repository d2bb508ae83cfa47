package provision

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/sandbox/hostfs"
)

// The per-workspace caches: what a workspace's builds write —
// Go's build and module caches, npm's, pip's, cargo's — lives under custos'
// state directory, one directory per workspace, owner-only, never shared
// between workspaces and never the host's own, so the second build of a
// workspace is warm and a poisoned cache reaches nothing but that
// workspace's next command. The total is capped; past the cap whole
// workspaces are evicted, least recently used first, never one a command
// is using.
//
// Layout of CacheDir:
//
//	<hash of the workspace path>/
//	    workspace    the workspace's path
//	    lock         flock: shared while a command runs, exclusive to evict or clear
//	    used         its modification time is the last use
//	    size         bytes in cache/, as last measured
//	    gitconfig    the user's git identity, bound read-only as ~/.gitconfig
//	    cache/       bound read-write at /var/cache/custos
//	        go-build go-mod go-path npm npm-logs pip cargo m2

// sbCache is where a workspace's caches are inside the sandbox.
const CacheInside = "/var/cache/custos"

// DefaultCacheBytes caps all workspaces' caches together.
const DefaultCacheBytes = 20 << 30

// cacheKinds are the subdirectories of a workspace's cache.
var cacheKinds = []string{"go-build", "go-mod", "go-path", "npm", "npm-logs", "pip", "cargo", "m2"}

// measureEvery bounds how often a workspace's cache is measured after its
// commands (a walk of a large build cache costs tens of milliseconds).
const measureEvery = 30 * time.Second

// DefaultCacheDir is the state directory's sandbox-cache.
func DefaultCacheDir() (string, error) {
	d, err := statedir.Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "sandbox-cache"), nil
}

// wsCaches are the per-workspace caches of one sandbox.
type wsCaches struct {
	root     string
	capBytes int64

	mu       sync.Mutex
	ready    map[string]bool      // workspace dirs checked and laid out
	measured map[string]time.Time // last measurement per workspace dir
	// Busy counts measurements still running in the background.
	Busy sync.WaitGroup
}

func newWSCaches(root string, capBytes int64) *wsCaches {
	return &wsCaches{root: root, capBytes: capBytes, ready: map[string]bool{}, measured: map[string]time.Time{}}
}

// CacheDirFor is the directory of ws's caches under root.
func CacheDirFor(root, ws string) string {
	return filepath.Join(root, hostfs.WorkspaceKey(ws))
}

// wsCache is one workspace's caches, held for a run.
type wsCache struct {
	dir  string
	lock *os.File
}

// open prepares ws's caches for a run and holds them (a shared lock) until
// release. It fails with why when the cache cannot be used: a symbolic
// link or a directory not the user's own is never used (the run then gets
// throw-away caches in its /tmp), and a full disk says so.
func (c *wsCaches) open(ws string) (*wsCache, error) {
	dir := CacheDirFor(c.root, ws)
	var err error
	// An eviction (another workspace's run, or `sandbox cache --clear`) may
	// remove the directory while it is laid out or locked; then again.
	for try := 0; try < 3; try++ {
		c.mu.Lock()
		ready := c.ready[dir]
		c.mu.Unlock()
		if !ready || try > 0 {
			if err = layOut(c.root, dir, ws); errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return nil, err
			}
			c.mu.Lock()
			c.ready[dir] = true
			c.mu.Unlock()
		}
		var w *wsCache
		if w, err = lockCache(dir); !errors.Is(err, fs.ErrNotExist) {
			return w, err
		}
	}
	return nil, cacheErr(dir, err)
}

// lockCache takes dir's shared lock and marks it used; fs.ErrNotExist
// says the cache was removed meanwhile.
func lockCache(dir string) (*wsCache, error) {
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, cacheErr(dir, err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_SH); err != nil {
		lock.Close()
		return nil, cacheErr(dir, err)
	}
	// An eviction may have removed the directory between the open and the
	// lock; the lock of a removed file guards nothing.
	if _, err := os.Lstat(filepath.Join(dir, "cache")); err != nil {
		lock.Close()
		return nil, fs.ErrNotExist
	}
	now := time.Now()
	_ = os.Chtimes(filepath.Join(dir, "used"), now, now)
	return &wsCache{dir: dir, lock: lock}, nil
}

// Release lets the cache go; the sandbox then measures it and evicts, in
// the background, at most every measureEvery per workspace.
func (c *wsCaches) release(w *wsCache) {
	w.lock.Close()
	// The size file's time is the last measurement by any process (each
	// `starter sandbox exec` is a process of its own).
	var lastFile time.Time
	if fi, err := os.Stat(filepath.Join(w.dir, "size")); err == nil {
		lastFile = fi.ModTime()
	}
	c.mu.Lock()
	last := c.measured[w.dir]
	if lastFile.After(last) {
		last = lastFile
	}
	due := time.Since(last) >= measureEvery
	if due {
		c.measured[w.dir] = time.Now()
	}
	c.mu.Unlock()
	if due {
		c.Busy.Add(1)
		go func() {
			defer c.Busy.Done()
			c.measureAndEvict(w.dir)
		}()
	}
}

// cacheErr words a cache failure for the model and the user.
func cacheErr(dir string, err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("sandbox: the disk holding the workspace cache %s is full (%w): free space, or clear caches with `starter sandbox cache --clear`", dir, syscall.ENOSPC)
	}
	return fmt.Errorf("sandbox: workspace cache %s: %w", dir, err)
}

// layOut creates (or checks) root and ws's directory: owner-only, the
// user's own, no symbolic links.
func layOut(root, dir, ws string) error {
	for _, d := range []string{root, dir, filepath.Join(dir, "cache")} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			if errors.Is(err, fs.ErrNotExist) && d == root {
				if err = os.MkdirAll(d, 0o700); err == nil {
					continue
				}
			}
			return cacheErr(dir, err)
		}
		if why := ownDir(d); why != "" {
			return fmt.Errorf("sandbox: workspace cache %s %s: not used", d, why)
		}
	}
	for _, k := range cacheKinds {
		if err := os.Mkdir(filepath.Join(dir, "cache", k), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return cacheErr(dir, err)
		}
	}
	if err := hostfs.WriteIfChanged(filepath.Join(dir, "workspace"), ws); err != nil {
		return cacheErr(dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "used"), os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return cacheErr(dir, err)
	}
	return f.Close()
}

// ownDir says why d is not a private directory of the user's, or "".
func ownDir(d string) string {
	fi, err := os.Lstat(d)
	switch {
	case err != nil:
		return err.Error()
	case fi.Mode()&fs.ModeSymlink != 0:
		return "is a symbolic link"
	case !fi.IsDir():
		return "is not a directory"
	}
	if why := hostfs.OwnedByUser(fi); why != "" {
		return why
	}
	if fi.Mode().Perm()&0o077 != 0 {
		// Ours, but opened up: close it again rather than refuse.
		if err := os.Chmod(d, 0o700); err != nil {
			return "is accessible to others and cannot be made private: " + err.Error()
		}
	}
	return ""
}

// measureAndEvict records dir's size, then, when it grew, evicts while
// the total passes the cap. The total only passes the cap when some
// workspace's cache grows, and each growth is found by a measurement like
// this one; a measurement that finds none spares the eviction's read of
// every workspace's record (with many workspaces, the most of a short
// `sandbox exec` process). A cap lowered in the settings takes effect at
// the next growth.
func (c *wsCaches) measureAndEvict(dir string) {
	size := hostfs.TreeSize(filepath.Join(dir, "cache"))
	sizeFile := filepath.Join(dir, "size")
	grew := true
	if b, err := os.ReadFile(sizeFile); err == nil {
		if old, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			grew = size > old
		}
	}
	_ = hostfs.WriteIfChanged(sizeFile, strconv.FormatInt(size, 10))
	now := time.Now()
	_ = os.Chtimes(sizeFile, now, now)
	if c.capBytes > 0 && grew {
		evict(c.root, c.capBytes)
	}
}

// CacheInfo describes one workspace's caches.
type CacheInfo struct {
	Workspace string    `json:"workspace"`
	Dir       string    `json:"dir"`
	Bytes     int64     `json:"bytes"`
	LastUsed  time.Time `json:"lastUsed"`
}

// ListCaches lists the workspace caches under root, most recently used
// first, with their sizes measured now.
func ListCaches(root string) ([]CacheInfo, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: caches: %w", err)
	}
	var out []CacheInfo
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		info := readInfo(dir)
		info.Bytes = hostfs.TreeSize(filepath.Join(dir, "cache"))
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b CacheInfo) int { return b.LastUsed.Compare(a.LastUsed) })
	return out, nil
}

// readInfo reads what dir records, its size as last measured.
func readInfo(dir string) CacheInfo {
	info := CacheInfo{Dir: dir}
	if b, err := os.ReadFile(filepath.Join(dir, "workspace")); err == nil {
		info.Workspace = string(b)
	}
	if fi, err := os.Stat(filepath.Join(dir, "used")); err == nil {
		info.LastUsed = fi.ModTime()
	}
	if b, err := os.ReadFile(filepath.Join(dir, "size")); err == nil {
		info.Bytes, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	return info
}

// ClearCache removes ws's caches under root, waiting for a command that
// uses them to end. It reports whether there was anything.
func ClearCache(root, ws string) (bool, error) {
	return removeCache(CacheDirFor(root, ws), true)
}

// removeCache removes a workspace's cache directory under its exclusive
// lock; without wait it gives up (false, nil) when a command holds it.
func removeCache(dir string, wait bool) (bool, error) {
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Lstat(dir); errors.Is(serr, fs.ErrNotExist) {
			return false, nil
		}
	} else if err != nil {
		return false, fmt.Errorf("sandbox: cache %s: %w", dir, err)
	} else {
		defer lock.Close()
		how := syscall.LOCK_EX
		if !wait {
			how |= syscall.LOCK_NB
		}
		if err := syscall.Flock(int(lock.Fd()), how); err != nil {
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return false, nil
			}
			return false, fmt.Errorf("sandbox: cache %s: %w", dir, err)
		}
	}
	// Renamed away first, under the lock: a run that opens the cache from
	// now on lays out a new one rather than lock a directory being deleted.
	trash := filepath.Join(filepath.Dir(dir), ".removing-"+filepath.Base(dir)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Rename(dir, trash); err != nil {
		return false, fmt.Errorf("sandbox: clearing cache %s: %w", dir, err)
	}
	if err := hostfs.RemoveAllWritable(trash); err != nil {
		return false, fmt.Errorf("sandbox: clearing cache %s: %w", dir, err)
	}
	return true, nil
}

// evict removes whole workspace caches, least recently used first, until
// what is left fits capBytes; a cache a command holds is skipped.
func evict(root string, capBytes int64) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	var all []CacheInfo
	var total int64
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			info := readInfo(filepath.Join(root, e.Name()))
			all = append(all, info)
			total += info.Bytes
		}
	}
	slices.SortFunc(all, func(a, b CacheInfo) int { return a.LastUsed.Compare(b.LastUsed) })
	for _, info := range all {
		if total <= capBytes {
			return
		}
		if ok, _ := removeCache(info.Dir, false); ok {
			total -= info.Bytes
		}
	}
}

// RemoveIdleCache removes the workspace cache directory dir (one of
// ListCaches' Dir) unless a command holds it: then it reports false and
// leaves it. The state directory's collection (retention) uses it.
func RemoveIdleCache(dir string) (bool, error) {
	return removeCache(dir, false)
}
