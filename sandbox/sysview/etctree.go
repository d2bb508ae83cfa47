package sysview

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

// The allowed /etc directories (ssl, alternatives, ld.so.conf.d, …) are
// copied into the /etc view too, not bound on top of it: each bind costs
// bubblewrap 0.8 a read of the whole mount table, and seven of them were a
// quarter of what the sandbox's mounts cost. A directory is copied as the
// sandbox should see it: world-readable files (copied), symbolic links (as
// links: they resolve inside the sandbox, where nothing of the home
// directory exists) and directories; what others may not read (the keys
// in /etc/ssl/private) is left out, a private directory kept empty. A
// directory holding anything else (a device, a socket), or more than
// etcTreeMax entries or etcTreeMaxBytes of files, is bound as before.

const (
	etcTreeMax      = 4096
	etcTreeMaxBytes = 16 << 20
	etcTreeMaxDepth = 8
)

// etcTreeEntry is one entry below a copied /etc directory.
type etcTreeEntry struct {
	rel    string // below the directory, slash-separated
	mode   fs.FileMode
	link   string // a symlink's target
	fi     fs.FileInfo
	hidden bool // a private directory: made, kept empty
}

var errEtcTreeUnfit = errors.New("sandbox: /etc view: directory cannot be copied")

// etcTrees keeps each directory's last listing, so a run re-walks a tree
// only when it changed: a directory's modification and change times move
// whenever an entry is added, removed or renamed (and a symbolic link can
// only be replaced, not changed), so a run stats the directories and the
// regular files (whose content can change in place) — about sixty calls
// for a Debian /etc instead of a walk, a readlink and a stat of some seven
// hundred entries, which cost milliseconds on every run.
type etcTrees struct {
	mu    sync.Mutex
	trees map[string]etcTreeCache
}

type etcTreeCache struct {
	root fs.FileInfo
	tree []etcTreeEntry
	sum  []byte // hashEtcTree of tree
}

// of is walkEtcTree(src) and the hash of what it lists (hashEtcTree),
// from the last listing when nothing changed.
func (c *etcTrees) of(src string) ([]etcTreeEntry, []byte, error) {
	root, err := os.Lstat(src)
	if err != nil {
		return nil, nil, errEtcTreeUnfit
	}
	c.mu.Lock()
	cached, ok := c.trees[src]
	c.mu.Unlock()
	if ok && sameFile(cached.root, root) && cached.unchanged(src) {
		return cached.tree, cached.sum, nil
	}
	tree, err := walkEtcTree(src)
	if err != nil {
		return nil, nil, err
	}
	h := sha256.New()
	hashEtcTree(h, tree)
	sum := h.Sum(nil)
	c.mu.Lock()
	if c.trees == nil {
		c.trees = map[string]etcTreeCache{}
	}
	c.trees[src] = etcTreeCache{root: root, tree: tree, sum: sum}
	c.mu.Unlock()
	return tree, sum, nil
}

// dirs lists the directories of every tree listed so far (their roots
// and every directory below), for sysMountWatch's watches.
func (c *etcTrees) dirs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for src, t := range c.trees {
		out = append(out, src)
		for _, e := range t.tree {
			if e.mode.IsDir() {
				out = append(out, filepath.Join(src, filepath.FromSlash(e.rel)))
			}
		}
	}
	slices.Sort(out)
	return out
}

// unchanged reports whether every directory and regular file of the
// listing still is as it was (links and private entries follow from their
// directories).
func (c etcTreeCache) unchanged(src string) bool {
	for _, e := range c.tree {
		if e.mode&fs.ModeSymlink != 0 || e.hidden {
			continue
		}
		fi, err := os.Lstat(filepath.Join(src, filepath.FromSlash(e.rel)))
		if err != nil || !sameFile(e.fi, fi) {
			return false
		}
	}
	return true
}

// sameFile reports whether two stats are of the same, unchanged file:
// device, inode, mode, size, modification and change time.
func sameFile(a, b fs.FileInfo) bool {
	if a.Mode() != b.Mode() || a.Size() != b.Size() || !a.ModTime().Equal(b.ModTime()) {
		return false
	}
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino && hostfs.StatChangeTime(sa) == hostfs.StatChangeTime(sb)
}

// walkEtcTree lists src for the view, or errEtcTreeUnfit.
func walkEtcTree(src string) ([]etcTreeEntry, error) {
	var out []etcTreeEntry
	var bytes int64
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return errEtcTreeUnfit
		}
		if p == src {
			return nil
		}
		rel, _ := filepath.Rel(src, p)
		if len(out) >= etcTreeMax || strings.Count(rel, string(filepath.Separator)) >= etcTreeMaxDepth {
			return errEtcTreeUnfit
		}
		fi, err := d.Info()
		if err != nil {
			return errEtcTreeUnfit
		}
		e := etcTreeEntry{rel: filepath.ToSlash(rel), mode: fi.Mode(), fi: fi}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if e.link, err = os.Readlink(p); err != nil {
				return errEtcTreeUnfit
			}
		case fi.IsDir():
			if fi.Mode().Perm()&0o005 != 0o005 {
				e.hidden = true
				out = append(out, e)
				return fs.SkipDir
			}
		case fi.Mode().IsRegular():
			if fi.Mode().Perm()&0o004 == 0 {
				return nil // the owner's alone: not shown
			}
			if bytes += fi.Size(); bytes > etcTreeMaxBytes {
				return errEtcTreeUnfit
			}
		default:
			return errEtcTreeUnfit
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, errEtcTreeUnfit
	}
	return out, nil
}

// hashEtcTree adds what names tree's content to the view's signature: a
// changed, added or removed file, link or directory gives a new view.
func hashEtcTree(h hash.Hash, tree []etcTreeEntry) {
	for _, e := range tree {
		fmt.Fprintf(h, "%s\x00%o\x00%t\x00%s\x00%d\x00%d\x00", e.rel, e.mode, e.hidden, e.link, e.fi.Size(), e.fi.ModTime().UnixNano())
		if st, ok := e.fi.Sys().(*syscall.Stat_t); ok {
			fmt.Fprintf(h, "%d\x00%d\x00%d\x00", st.Dev, st.Ino, hostfs.StatChangeTime(st))
		}
	}
}

// copyEtcTree writes tree (listed from src) at dst, a new directory. The
// directories get their modes last, so a read-only one can be filled.
func copyEtcTree(src, dst string, mode fs.FileMode, tree []etcTreeEntry) error {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	dirs := []etcTreeEntry{{mode: mode}}
	for _, e := range tree {
		to := filepath.Join(dst, filepath.FromSlash(e.rel))
		var err error
		switch {
		case e.mode&fs.ModeSymlink != 0:
			err = os.Symlink(e.link, to)
		case e.mode.IsDir():
			err = os.Mkdir(to, 0o700)
			dirs = append(dirs, e)
		default:
			err = copyEtcFile(filepath.Join(src, filepath.FromSlash(e.rel)), to, e.mode.Perm())
		}
		if err != nil {
			return err
		}
	}
	for _, d := range slices.Backward(dirs) {
		perm := d.mode.Perm()
		if d.hidden {
			perm = 0o700
		}
		if err := os.Chmod(filepath.Join(dst, filepath.FromSlash(d.rel)), perm); err != nil {
			return err
		}
	}
	return nil
}
