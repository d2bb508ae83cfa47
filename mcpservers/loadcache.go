package mcpservers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/settingsfile"
)

// loadCache keeps each workspace's Config as last read, with the identity
// of every file it was read from: the settings files, the workspace's
// .mcp.json and the approvals. An unchanged set costs a stat of each; any
// change (a write changes size, mtime or ctime, a replacement the inode, a
// new file its absence) reads them all again on the next call. Load reads
// nothing else: the environment is read when a server starts (Expand),
// not here.
type loadCache struct {
	mu    sync.Mutex
	m     map[string]cachedLoad
	reads atomic.Int64 // Loads done, for tests
}

type cachedLoad struct {
	key string
	cfg Config
}

// loadRacyWindow: a file changed this recently may change again within
// its timestamps' tick, unseen by its identity, so a set with such a file
// is read afresh each time until it settles (git's "racy" rule).
const loadRacyWindow = time.Second

// get is Load's Config for the workspace, from the cache when its files
// are as they were.
func (c *loadCache) get(user, state, ws string) (Config, error) {
	files := append(settingsfile.Files(user, ws), filepath.Join(state, approvalsFile))
	if ws != "" {
		files = append(files, filepath.Join(ws, ".mcp.json"))
	}
	id := user + "\x00" + state + "\x00" + ws
	now := time.Now()
	key, settled := filesKey(files, now)
	if key != "" {
		c.mu.Lock()
		hit, ok := c.m[id]
		c.mu.Unlock()
		if ok && hit.key == key {
			return hit.cfg, nil
		}
	}
	// The key was taken before the read: a file changed meanwhile gives
	// another key next time, never a stale Config under the new one.
	c.reads.Add(1)
	cfg, _, err := Load(user, state, ws)
	if err != nil || key == "" || !settled {
		return cfg, err
	}
	// Shared by every caller from now on: an append must copy.
	cfg.Servers, cfg.Notes = slices.Clip(cfg.Servers), slices.Clip(cfg.Notes)
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedLoad{}
	}
	c.m[id] = cachedLoad{key: key, cfg: cfg}
	c.mu.Unlock()
	return cfg, nil
}

// filesKey is the identity of files (path, device, inode, size, mtime,
// ctime; a missing file as missing), "" when one cannot be read; settled
// says that none changed within loadRacyWindow of now.
func filesKey(files []string, now time.Time) (key string, settled bool) {
	var b strings.Builder
	settled = true
	for _, f := range files {
		fi, err := os.Stat(f)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(&b, "%s -\n", f)
			continue
		}
		if err != nil {
			return "", false
		}
		s := hostfs.SigOf(fi)
		fmt.Fprintf(&b, "%s %d %d %d %d %d %d\n", f, s.Mode, s.Dev, s.Ino, s.Size, s.Mtim, s.Ctim)
		if now.Sub(time.Unix(0, s.Mtim)) < loadRacyWindow || now.Sub(time.Unix(0, s.Ctim)) < loadRacyWindow {
			settled = false
		}
	}
	return b.String(), settled
}
