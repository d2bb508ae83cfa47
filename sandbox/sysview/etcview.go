package sysview

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/mount"
)

// The sandbox's /etc in one mount. Each bubblewrap mount costs a mount, a
// remount and a re-read of the whole mount table, so the thirty or so
// allowed /etc entries bound one by one were the largest part of the
// sandbox's start-up (and made every later mount dearer). Instead, the
// allowed regular files, and the allowed directories' trees (etctree.go),
// are copied into a view directory on the host, and the view is bound
// read-only as /etc; only a directory that cannot be copied is still bound
// on top of it, onto an empty directory the view holds for it.
//
// The view is kept current by the stat of each source, taken at every run
// (probeSystem stats them anyway): device, inode, size, mode, modification
// and change time name the view (a hash of them), so a changed, added or
// removed /etc file gives a new view, built then, and an unchanged one is
// reused, also by the next worker process. Views live in a directory of the
// worker's own cache directory (mode 0700, owned by it: anything else there
// is refused, and the sandbox falls back to binding each entry); the
// sandbox never sees it, since it sees nothing of the home directory (a
// workspace that contains it gets the per-entry binds too). Views older
// than a day other than the current one are removed when a new one is
// built.

// etcViewVersion changes when what a view holds changes.
const etcViewVersion = "2"

// etcViewMaxAge is how long an unused view is kept.
const etcViewMaxAge = 24 * time.Hour

// etcViews is the process's cache of the current view.
var etcViews etcViewCache

type etcViewCache struct {
	mu        sync.Mutex
	base, sig string // where and of what the last view was built or found
	dir       string
	// trees are the copied directories' listings (etctree.go).
	trees etcTrees
}

// etcViewBase is the directory the views live in: the user's cache
// directory (never the shared /tmp, whose cleaners remove what was not
// used for some days).
func etcViewBase() string {
	d, err := os.UserCacheDir()
	if err != nil {
		d = filepath.Join(os.TempDir(), fmt.Sprintf("custos-cache-%d", os.Geteuid()))
	}
	return filepath.Join(d, "custos", "etc-view")
}

// MountsFor is systemMounts for a run in workspace ws (a real path,
// or "" for none): the /etc files folded into one view when that is
// possible and ws does not contain the view, each entry bound by itself
// otherwise. view says whether the view is used: it holds the sandbox's
// passwd and group, which then need no mounts of their own.
//
// The folded mounts are kept between runs while nothing they were made of
// changes (etcwatch.go): then a run pays a few calls for them, not the
// stat of every /etc entry and tree.
func MountsFor(ws string) (ms []mount.Mount, view bool) {
	base := etcViewBase()
	if folded, dir, ok := sysWatch.current(base); ok && (ws == "" || !hostfs.Inside(ws, dir)) {
		return slices.Clip(folded), true // kept: no directory bound from the host, no masks
	}
	l, err := sysWatch.lookAndKeep(base)
	if err != nil || (ws != "" && hostfs.Inside(ws, l.dir)) {
		// A workspace holding the view could change the next runs' /etc.
		ms, _ := probeSystemInfo(RootEntries, EtcPaths())
		return append(ms, privateEtcMasks(ms)...), false
	}
	// Only the directories still bound need masks: the view holds none
	// of what others may not read.
	return append(slices.Clip(l.folded), privateEtcMasks(l.folded)...), true
}

// EtcPaths are the absolute paths of etcAllow.
func EtcPaths() []string {
	etc := make([]string, len(etcAllow))
	for i, e := range etcAllow {
		etc[i] = "/etc/" + e
	}
	return etc
}

// etcViewEntry is one /etc mount as the view sees it.
type etcViewEntry struct {
	name string // below /etc
	src  string
	copy bool // copied into the view (a file, or a directory's tree); else a directory bound on it
	fi   fs.FileInfo
	// tree is what a copied directory holds (etctree.go), treeSum its
	// hash for the view's signature.
	tree    []etcTreeEntry
	treeSum []byte
}

// fold replaces the /etc mounts of ms (infos holds the stat of each) by
// the view bound at /etc and binds of the directories on top of it.
func (c *etcViewCache) fold(base string, ms []mount.Mount, infos map[string]fs.FileInfo) (folded []mount.Mount, dir string, err error) {
	var out, dirs []mount.Mount
	var ents []etcViewEntry
	for _, m := range ms {
		name, ok := strings.CutPrefix(m.Dst, "/etc/")
		if !ok || m.Kind != mount.ROBind || strings.Contains(name, "/") {
			out = append(out, m)
			continue
		}
		fi := infos[m.Dst]
		if fi == nil {
			return nil, "", fmt.Errorf("sandbox: /etc view: no stat of %s", m.Dst)
		}
		e := etcViewEntry{name: name, src: m.Src, fi: fi}
		switch {
		case fi.Mode().IsRegular() && fi.Mode().Perm()&0o004 != 0:
			e.copy = true
		case fi.IsDir():
			// Walked and copied by its real path: /etc/ssl may be a link.
			real, rerr := filepath.EvalSymlinks(m.Src)
			if tree, sum, err := c.trees.of(real); rerr == nil && err == nil {
				e.src, e.copy, e.tree, e.treeSum = real, true, tree, sum
			} else {
				dirs = append(dirs, m)
			}
		default:
			// Not world-readable, or not a plain file (a device, a fifo):
			// copying would change what it is; bind it as before.
			dirs = append(dirs, m)
		}
		ents = append(ents, e)
	}
	if len(ents) == 0 {
		return nil, "", errors.New("sandbox: /etc view: nothing to show")
	}
	if dir, err = c.view(base, ents); err != nil {
		return nil, "", err
	}
	out = append(out, mount.Mount{Kind: mount.ROBind, Src: dir, Dst: "/etc"})
	return append(out, dirs...), dir, nil
}

// etcViewSignature names the view of ents.
func etcViewSignature(ents []etcViewEntry) string {
	h := sha256.New()
	passwd, group := Identity()
	fmt.Fprintf(h, "v%s\x00%s\x00%s\x00", etcViewVersion, passwd, group)
	for _, e := range ents {
		fmt.Fprintf(h, "%s\x00%t\x00", e.name, e.copy)
		if !e.copy {
			continue
		}
		fmt.Fprintf(h, "%d\x00%o\x00%d\x00", e.fi.Size(), e.fi.Mode(), e.fi.ModTime().UnixNano())
		h.Write(e.treeSum)
		if st, ok := e.fi.Sys().(*syscall.Stat_t); ok {
			// The change time too: no one can set it, so a rewrite that
			// restores the modification time still shows.
			fmt.Fprintf(h, "%d\x00%d\x00%d\x00", st.Dev, st.Ino, hostfs.StatChangeTime(st))
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// view returns the directory of the view of ents, building it when no run
// has yet.
func (c *etcViewCache) view(base string, ents []etcViewEntry) (string, error) {
	sig := etcViewSignature(ents)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.base == base && c.sig == sig {
		// One Lstat: a view removed meanwhile is built again.
		if fi, err := os.Lstat(c.dir); err == nil && fi.IsDir() {
			return c.dir, nil
		}
	}
	real, err := ownPrivateDir(base)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(real, sig)
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		if err := buildEtcView(real, dir, ents); err != nil {
			return "", err
		}
		pruneEtcViews(real, dir)
	}
	c.base, c.sig, c.dir = base, sig, dir
	return dir, nil
}

// ownPrivateDir makes sure base is a directory of this process's user that
// nobody else can write to (or list), creating it when missing, and
// returns its real path.
func ownPrivateDir(base string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(base), 0o700); err != nil {
		return "", fmt.Errorf("sandbox: /etc view: %w", err)
	}
	if err := os.Mkdir(base, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("sandbox: /etc view: %w", err)
	}
	real, err := filepath.EvalSymlinks(base)
	if err != nil {
		return "", fmt.Errorf("sandbox: /etc view: %w", err)
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return "", fmt.Errorf("sandbox: /etc view: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("sandbox: /etc view: %s is not a private directory of this user", base)
	}
	return real, nil
}

// buildEtcView writes the view of ents at dir: it is built beside it and
// renamed into place, so a view that exists is complete; another process
// building the same view at the same time is fine.
func buildEtcView(base, dir string, ents []etcViewEntry) error {
	tmp, err := os.MkdirTemp(base, ".build-")
	if err != nil {
		return fmt.Errorf("sandbox: /etc view: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("sandbox: /etc view: %w", err)
	}
	passwd, group := Identity()
	// The sandbox's own passwd and group (identityFiles): with the view,
	// bwrapArgs mounts no generated ones over them.
	for name, data := range map[string]string{"passwd": passwd, "group": group} {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(data), 0o644); err != nil {
			return fmt.Errorf("sandbox: /etc view: %w", err)
		}
	}
	for _, e := range ents {
		dst := filepath.Join(tmp, e.name)
		if !e.copy {
			if e.fi.IsDir() {
				err = os.Mkdir(dst, 0o755)
			} else {
				err = os.WriteFile(dst, nil, 0o644)
			}
		} else if e.fi.IsDir() {
			err = copyEtcTree(e.src, dst, e.fi.Mode(), e.tree)
		} else {
			err = copyEtcFile(e.src, dst, e.fi.Mode().Perm())
		}
		if err != nil {
			return fmt.Errorf("sandbox: /etc view: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if fi, lerr := os.Lstat(dir); lerr == nil && fi.IsDir() {
			return nil // built by another process meanwhile
		}
		return fmt.Errorf("sandbox: /etc view: %w", err)
	}
	return nil
}

// copyEtcFile copies a regular file with the given permissions (past the
// umask).
func copyEtcFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	err = errors.Join(err, out.Chmod(perm), out.Close())
	return err
}

// pruneEtcViews removes the views (and abandoned builds) other than keep
// that are older than etcViewMaxAge.
func pruneEtcViews(base, keep string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		p := filepath.Join(base, e.Name())
		if p == keep {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > etcViewMaxAge {
			_ = os.RemoveAll(p)
		}
	}
}
