package hostfs

import (
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// FileSig identifies one version of a file: a write changes mtime and
// ctime (ctime cannot be set back), a replacement the inode.
type FileSig struct {
	Mode       fs.FileMode
	Size       int64
	Dev, Ino   uint64
	Mtim, Ctim int64 // nanoseconds
}

func SigOf(fi fs.FileInfo) FileSig {
	s := FileSig{Mode: fi.Mode(), Size: fi.Size()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.Dev, s.Ino = uint64(st.Dev), st.Ino //nolint:unconvert // Dev is not uint64 everywhere
		s.Mtim, s.Ctim = fi.ModTime().UnixNano(), StatChangeTime(st)
	}
	return s
}

// DirEnt is one directory entry: its name and type.
type DirEnt struct {
	Name string
	Typ  fs.FileMode
}

// dirListing is a directory's entries as read, with the directory's
// identity just before the read.
type dirListing struct {
	sig  FileSig
	ents []DirEnt
}

// DirListings are the listings of the last walk of a workspace. A listing
// is reused only when the directory's identity (inode, mtime, ctime) is the
// same as just before it was read, and its ctime lies over a second before
// that read: adding, removing or renaming an entry sets a directory's
// ctime to now, and nothing without CAP_SYS_TIME sets it back; the second
// covers the clock's coarse ticks, as git's "racy" rule does for the index.
// Anything else is read again. This spares most of the readdir calls of a
// walk (one lstat instead of open, getdents, close), which are its cost.
//
// The walks before a command (the toolchains' detection, the snapshot, the
// protected paths) share one dirListings, and among them a listing too
// recent to keep (fresh) is reused as long as the directory's identity is
// unchanged: nothing of the sandbox runs before the command, and every
// run's placeholders make the root's listing too recent every time. done,
// which hands the listings to the walk after the command, leaves those
// out.
type DirListings struct {
	m     map[string]dirListing
	next  map[string]dirListing
	fresh map[string]dirListing
}

func NewDirListings() *DirListings {
	return &DirListings{m: map[string]dirListing{}, next: map[string]dirListing{}}
}

// racyWindow is how recent a directory change makes its listing unfit for
// reuse.
const RacyWindow = time.Second

func (c *DirListings) List(rel, abs string) ([]DirEnt, error) {
	fi, err := os.Lstat(abs)
	if err != nil {
		return nil, err
	}
	sig := SigOf(fi)
	if ents, ok := c.reuse(rel, sig); ok {
		return ents, nil
	}
	read := time.Now()
	des, err := os.ReadDir(abs)
	if err != nil {
		return nil, err
	}
	ents := DirEntsOf(des)
	if time.Unix(0, sig.Ctim).Before(read.Add(-RacyWindow)) && time.Unix(0, sig.Mtim).Before(read.Add(-RacyWindow)) {
		c.next[rel] = dirListing{sig, ents}
	} else {
		if c.fresh == nil {
			c.fresh = map[string]dirListing{}
		}
		c.fresh[rel] = dirListing{sig, ents}
	}
	return ents, nil
}

// DirEntsOf is a listing's entries as dirEnts.
func DirEntsOf(des []os.DirEntry) []DirEnt {
	ents := make([]DirEnt, len(des))
	for i, e := range des {
		ents[i] = DirEnt{e.Name(), e.Type()}
	}
	return ents
}

// Cached is the listing of the directory abs (rel in the workspace) when
// one can be reused, without reading the directory.
func (c *DirListings) Cached(rel, abs string) ([]DirEnt, bool) {
	fi, err := os.Lstat(abs)
	if err != nil {
		return nil, false
	}
	return c.reuse(rel, SigOf(fi))
}

// reuse is the listing of rel if the directory's identity is still sig:
// one of this walk's (or of another over the same listings), or the last
// walk's.
func (c *DirListings) reuse(rel string, sig FileSig) ([]DirEnt, bool) {
	if l, ok := c.next[rel]; ok && l.sig == sig {
		return l.ents, true
	}
	if l, ok := c.fresh[rel]; ok && l.sig == sig {
		return l.ents, true
	}
	if l, ok := c.m[rel]; ok && l.sig == sig {
		c.next[rel] = l
		return l.ents, true
	}
	return nil, false
}

// Done makes this walk's listings the ones the next walk reuses.
func (c *DirListings) Done() *DirListings {
	return &DirListings{m: c.next, next: map[string]dirListing{}}
}

// HostListings keeps, per workspace, the directory listings of its last
// walk, for a few workspaces. A run takes its workspace's out and puts its
// own back, so two runs never share one.
type HostListings struct {
	mu sync.Mutex
	m  map[string]*DirListings
}

const maxHostListings = 8

func (h *HostListings) Take(ws string) *DirListings {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.m[ws]
	delete(h.m, ws)
	return l
}

func (h *HostListings) Put(ws string, l *DirListings) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]*DirListings{}
	}
	if len(h.m) >= maxHostListings {
		for k := range h.m {
			delete(h.m, k) // any one: the cache only saves time
			break
		}
	}
	h.m[ws] = l
}
