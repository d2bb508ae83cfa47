//go:build linux

package overlaymerge

// How Apply works.
//
// The overlay is mounted with userxattr and without redirect_dir, metacopy
// or index, so its upper layer holds only what the kernel documents for
// that mode: new and copied-up entries, whiteouts (character devices 0/0),
// directories marked opaque (user.overlay.opaque "y"), and bookkeeping
// xattrs (user.overlay.origin, .impure, ...) that mean nothing outside
// the overlay.
//
// The upper layer was written by an untrusted command, and the workspace
// may hold symbolic links pointing anywhere (evil -> /etc). So every step
// goes through directory file descriptors opened with O_NOFOLLOW from the
// two roots, and every name used with one is a single path component
// looked up without following it: no symbolic link, in either tree, is
// ever followed. The calls with no such form on every kernel (xattrs of
// non-directories before Linux 6.13's listxattrat, chmod without following)
// take a path through /proc/self/fd/N, whose magic link names the
// directory or O_PATH descriptor itself rather than walking names again.
//
// custos may be killed mid-merge and run Apply again on what is left,
// so the merge is ordered to be resumable: an entry leaves the upper layer
// only once it is applied, the workspace side of an opaque directory is
// cleared before its opaque mark is dropped, and a directory's own mode
// and times, which moving its entries out changes, are stashed on it
// first (mergeStash). An upper entry whose mode the merge widens for a
// moment (a directory it must read, a read-only file whose overlay xattrs
// it must remove) is named in an undo record on the upper root first
// (mergePending), which the next run applies before anything else.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

const (
	// ovlXattrPrefix is the overlay's private xattr namespace in
	// userxattr mode. Through the overlay nobody can read or set a name
	// in it, so the command cannot have forged one (nor mergeStash).
	ovlXattrPrefix = "user.overlay."
	OpaqueXattr    = ovlXattrPrefix + "opaque"
	// mergeStash holds an upper directory's mode and times from before
	// this merge (or an earlier, interrupted one) touched it.
	mergeStash = ovlXattrPrefix + "custos.merge"
	// mergePending, on the upper root, names the one upper entry whose
	// mode the merge is widening or narrowing back, with that mode.
	mergePending = ovlXattrPrefix + "custos.pending"
	// mergeTmpPrefix names the copies the cross-device fallback makes in
	// the workspace before renaming them over the final name.
	mergeTmpPrefix = ".custos-merge-"
	// mergeMaxErrors bounds the errors kept: a tree that fails whole
	// would otherwise give one per entry.
	mergeMaxErrors = 50
	mergeDirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	mergeStashV1   = 1
	mergeStashLen  = 1 + 4 + 4*8
)

// Stats counts what a merge did: Entries the upper entries looked at
// (at every depth, whiteouts included), Renamed those moved by one rename
// (a directory moved whole counts once), Copied those recreated by the
// cross-device fallback (directories included), Removed the whiteouts
// applied.
type Stats struct {
	Entries, Renamed, Copied, Removed int
	// SetID are the entries whose set-uid or set-gid bit was cleared,
	// Special the fifos and sockets not applied (at most
	// mergeMaxNamed each, relative to the roots).
	SetID, Special []string
}

// mergeMaxNamed bounds the names Stats keeps of each kind.
const mergeMaxNamed = 100

// named adds rel to a list of Stats, up to mergeMaxNamed.
func named(list *[]string, rel string) {
	if len(*list) < mergeMaxNamed && !slices.Contains(*list, rel) {
		*list = append(*list, rel)
	}
}

// Apply applies the overlay's upper layer (upper) to the workspace
// ws (canonical, the overlay's lower layer), then leaves upper empty.
//
// What each upper entry means is overlayfs' own: a whiteout deletes the
// name; an opaque directory replaces the workspace's entry; another
// directory is merged into a workspace directory, or moved whole where
// the workspace has none (or had a non-directory, removed first); any
// other entry replaces whatever the workspace has. Directories end with
// the upper directory's mode and times, files keep theirs, and no
// user.overlay.* xattr lands in the workspace (others do).
//
// Only user.overlay.opaque "y" marks an opaque directory: the kernel
// defines "x" as "holds xattr whiteouts" (a form overlayfs never creates
// in an upper layer, and honours in lower ones only), not as opaque, and
// treats any other value as not opaque, so a merge doing otherwise would
// delete what the command saw.
//
// The workspace root itself is never removed or replaced, and keeps its
// own mode and times: the upper root is a directory custos made, not a
// copy-up, so a chmod or touch of the workspace root by the command is
// not applied.
//
// Entries move by rename; across mounts (EXDEV) they are copied instead:
// files into a temporary name then renamed over the final one, symbolic
// links recreated, directories created and filled. Hard links among upper
// files survive a rename but not the copy, which makes one file per name.
//
// Nothing set-id and nothing device-like leaves the sandbox: a file's
// set-uid and set-gid bits are cleared before it moves (a set-uid file
// would run with the worker's rights for whoever starts it on the host),
// a directory keeps set-gid only where the kernel gives it (inside a
// set-gid directory, or one the workspace had so); fifos and sockets are
// not applied (a host tool opening a fifo would hang; a socket's listener
// died with the command), and device nodes other than whiteouts, which no
// sandboxed command can make, are refused. Each is named in the stats.
//
// A failure on one entry does not stop the rest: it is left in upper,
// and the errors, each with the entry's path relative to the roots, are
// returned joined. Running Apply again on what is left, also after
// being killed mid-merge, ends as one uninterrupted run would have.
func Apply(upper, ws string) (Stats, error) {
	var m merger
	return m.run(upper, ws)
}

// merger is one Apply run.
type merger struct {
	stats   Stats
	errs    []error
	nerr    int
	up      int    // the upper root
	upMnt   uint64 // its mount ID, 0 if unknown
	pending bool   // mergePending was set
	noAt    bool   // no listxattrat and removexattrat: /proc paths instead

	forceCopy      bool // tests: every move from upper to ws fails with EXDEV
	skipMountCheck bool // tests: try to rename whole directories across mounts
	stopAt, ops    int  // tests: panic(errMergeKilled) at the stopAt-th change

	// Buffers reused across entries: directory listings, xattr names and
	// values, link targets, file data.
	dbuf, xbuf, vbuf, lbuf, cbuf []byte
}

// errMergeKilled is what a test's simulated kill panics with.
var errMergeKilled = errors.New("merge killed (test)")

// tick comes before every change either tree sees, so a test can stop
// the merge between any two of them, as a kill would.
func (m *merger) tick() {
	if m.stopAt == 0 {
		return
	}
	m.ops++
	if m.ops == m.stopAt {
		panic(errMergeKilled)
	}
}

// fail records err for the entry at rel and lets the merge go on.
func (m *merger) fail(rel string, err error) {
	m.nerr++
	if len(m.errs) < mergeMaxErrors {
		m.errs = append(m.errs, fmt.Errorf("sandbox: merge upper layer: %q: %w", rel, err))
	}
}

func (m *merger) joined() error {
	errs := m.errs
	if m.nerr > len(errs) {
		errs = append(errs, fmt.Errorf("sandbox: merge upper layer: and %d more errors", m.nerr-len(errs)))
	}
	return errors.Join(errs...)
}

func (m *merger) run(upper, ws string) (Stats, error) {
	fail := func(what string, err error) (Stats, error) {
		return m.stats, fmt.Errorf("sandbox: merge upper layer: %s: %w", what, err)
	}
	// Xattrs of non-directories are reached by a path through /proc.
	if err := unix.Access("/proc/self/fd", unix.X_OK); err != nil {
		return fail("/proc/self/fd is needed", err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(unix.AT_FDCWD, upper, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fail("upper layer", err)
	}
	up, err := m.openDir(unix.AT_FDCWD, upper, &st)
	if err != nil {
		return fail("open the upper layer", err)
	}
	defer unix.Close(up)
	w, err := unix.Open(ws, mergeDirFlags, 0)
	if err != nil {
		return fail("open the workspace", err)
	}
	defer unix.Close(w)
	m.up, m.upMnt = up, mergeMountID(up)
	m.undoPending()
	m.mergeDir(up, w, "")
	if m.pending {
		m.tick()
		_ = unix.Fremovexattr(up, mergePending)
	}
	return m.stats, m.joined()
}

// writePending records, on the upper root, that the mode of the upper
// entry rel (inode ino) is being changed from mode, or back to it.
func (m *merger) writePending(rel string, ino uint64, mode uint32) {
	b := make([]byte, 13, 13+len(rel))
	b[0] = mergeStashV1
	binary.LittleEndian.PutUint64(b[1:], ino)
	binary.LittleEndian.PutUint32(b[9:], mode)
	b = append(b, rel...)
	m.tick()
	if unix.Fsetxattr(m.up, mergePending, b, 0) == nil {
		m.pending = true
	}
}

// undoPending gives the entry an interrupted merge's mergePending names
// its mode back, if that merge left it changed, and drops the record.
func (m *merger) undoPending() {
	b, err := m.getXattr(m.up, mergePending)
	if err != nil || len(b) < 14 || b[0] != mergeStashV1 {
		return
	}
	ino, mode := binary.LittleEndian.Uint64(b[1:]), binary.LittleEndian.Uint32(b[9:])&0o7777
	rel := string(b[13:])
	if err := m.restoreMode(rel, ino, mode); err != nil {
		m.fail(rel, fmt.Errorf("restore the mode an interrupted merge changed: %w", err))
	}
	m.tick()
	_ = unix.Fremovexattr(m.up, mergePending)
}

// restoreMode sets the mode of the upper entry rel to mode if it is still
// there (inode ino), walking to it by descriptors.
func (m *merger) restoreMode(rel string, ino uint64, mode uint32) error {
	dir, name := path.Split(rel)
	fd := m.up
	for _, c := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		if c == "" {
			continue
		}
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if fd != m.up {
			unix.Close(fd)
		}
		if err == unix.ENOENT {
			return nil
		}
		if err != nil {
			return err
		}
		fd = next
	}
	if fd != m.up {
		defer unix.Close(fd)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return err
	}
	if st.Ino != ino || st.Mode&unix.S_IFMT == unix.S_IFLNK || st.Mode&0o7777 == mode {
		return nil
	}
	return m.chmodNoFollow(fd, name, mode)
}

// mergeDir applies every entry of the upper directory up (at rel) to the
// workspace directory ws. It reads the whole listing before changing
// anything, so moving entries out cannot make it skip or repeat one.
func (m *merger) mergeDir(up, ws int, rel string) {
	names, types, err := m.readNames(up)
	if err != nil {
		m.fail(mergeRel(rel, "."), fmt.Errorf("read the directory: %w", err))
		return
	}
	for i, name := range names {
		m.entry(up, ws, rel, name, types[i])
	}
}

// mergeNonDirType reports whether a listing's type is a file, symbolic
// link, fifo or socket (overlayfs needs an upper file system that lists
// types).
func mergeNonDirType(dtype byte) bool {
	return dtype == unix.DT_REG || dtype == unix.DT_LNK || dtype == unix.DT_FIFO || dtype == unix.DT_SOCK
}

// mergeStat fills st, when it is still empty, with the stat of name in
// dirfd.
func mergeStat(dirfd int, name string, st *unix.Stat_t) error {
	if st.Mode != 0 {
		return nil
	}
	return unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
}

func mergeRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return path.Join(rel, name)
}

// entry applies the upper entry name of up (its type from the listing,
// dtype) to ws.
func (m *merger) entry(up, ws int, rel, name string, dtype byte) {
	// A non-directory's rename needs no more than its type: the rest of
	// its stat (st.Mode 0 until then) is fetched only where needed.
	var st unix.Stat_t
	if !mergeNonDirType(dtype) {
		if err := unix.Fstatat(up, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			m.fail(mergeRel(rel, name), fmt.Errorf("stat: %w", err))
			return
		}
	}
	m.stats.Entries++
	var err error
	switch st.Mode & unix.S_IFMT {
	case 0:
		if dtype == unix.DT_FIFO || dtype == unix.DT_SOCK {
			err = m.dropSpecial(up, name, mergeRel(rel, name))
			break
		}
		err = m.nonDir(up, ws, mergeRel(rel, name), name, &st)
	case unix.S_IFCHR, unix.S_IFBLK:
		if st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0 {
			err = m.whiteout(up, ws, name)
		} else {
			err = errors.New("a device node, which no sandboxed command can make: not applied")
		}
	case unix.S_IFDIR:
		err = m.dir(up, ws, rel, name, &st)
	case unix.S_IFIFO, unix.S_IFSOCK:
		err = m.dropSpecial(up, name, mergeRel(rel, name))
	default:
		err = m.nonDir(up, ws, mergeRel(rel, name), name, &st)
	}
	if err != nil {
		m.fail(mergeRel(rel, name), err)
	}
}

// dropSpecial removes a fifo or socket from upper instead of applying it:
// the workspace keeps what it had under that name.
func (m *merger) dropSpecial(up int, name, rel string) error {
	m.tick()
	if err := unix.Unlinkat(up, name, 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("remove a fifo or socket from the upper layer: %w", err)
	}
	named(&m.stats.Special, rel)
	return nil
}

// clearSetID clears the set-uid and set-gid bits of the regular file name
// in up (rel, st maybe not fetched yet) before it moves, keeping st true.
func (m *merger) clearSetID(up int, name, rel string, st *unix.Stat_t) error {
	if err := mergeStat(up, name, st); err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&hostfs.SetIDBits == 0 {
		return nil
	}
	if err := m.chmodNoFollow(up, name, st.Mode&0o7777&^hostfs.SetIDBits); err != nil {
		return fmt.Errorf("clear its set-uid and set-gid bits: %w", err)
	}
	st.Mode &^= hostfs.SetIDBits
	named(&m.stats.SetID, rel)
	return nil
}

// dirSetID gives the upper directory d the set-id bits it may keep: no
// set-uid (it means nothing on a directory), and set-gid only where the
// kernel would give it, inside a set-gid directory (parent, the upper
// directory it is in), or where the workspace's directory has it already
// (wsMode, 0 for none).
func (m *merger) dirSetID(d *mergeUpperDir, parent int, wsMode uint32) {
	keep := wsMode & unix.S_ISGID
	var pst unix.Stat_t
	if unix.Fstat(parent, &pst) == nil {
		keep |= pst.Mode & unix.S_ISGID
	}
	if mode := d.meta.mode &^ hostfs.SetIDBits; mode|keep&d.meta.mode != d.meta.mode {
		d.meta.mode = mode | keep&d.meta.mode
		named(&m.stats.SetID, d.rel)
	}
}

// whiteout deletes name from ws, then the whiteout itself.
func (m *merger) whiteout(up, ws int, name string) error {
	if err := m.removeAll(ws, name); err != nil {
		return fmt.Errorf("remove what the whiteout deletes: %w", err)
	}
	m.tick()
	if err := unix.Unlinkat(up, name, 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("remove the whiteout: %w", err)
	}
	m.stats.Removed++
	return nil
}

// move renames name from up to ws, unless a test makes it cross-device.
func (m *merger) move(up, ws int, name string) error {
	if m.forceCopy {
		return unix.EXDEV
	}
	m.tick()
	return unix.Renameat(up, name, ws, name)
}

// nonDir applies a file, symbolic link, fifo or socket (upper entry rel,
// st maybe not fetched yet): it replaces whatever ws has under its name.
func (m *merger) nonDir(up, ws int, rel, name string, st *unix.Stat_t) error {
	// Stripped in upper, before it moves: a merge killed after the move
	// could not find it again.
	if err := m.clearSetID(up, name, rel, st); err != nil {
		return err
	}
	if err := m.stripPath(up, name, rel, st); err != nil {
		return err
	}
	err := m.move(up, ws, name)
	if err == unix.EISDIR {
		// The command deleted a directory and reused its name.
		if err = m.removeAll(ws, name); err != nil {
			return fmt.Errorf("remove the directory it replaces: %w", err)
		}
		err = m.move(up, ws, name)
	}
	if err == nil {
		m.stats.Renamed++
		return nil
	}
	if err != unix.EXDEV {
		return fmt.Errorf("move into the workspace: %w", err)
	}
	if err := mergeStat(up, name, st); err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if err := m.copyNonDir(up, ws, rel, name, st); err != nil {
		return err
	}
	m.tick()
	if err := unix.Unlinkat(up, name, 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("remove from the upper layer after copying it: %w", err)
	}
	return nil
}

// mergeUpperDir is an open upper directory (rel, inode ino): its mode and
// times before the merge (meta) and its mode now (cur), which the merge
// may have widened.
type mergeUpperDir struct {
	fd   int
	rel  string
	ino  uint64
	meta mergeDirMeta
	cur  uint32
}

// mergeDirMeta is a directory's permission bits and times.
type mergeDirMeta struct {
	mode         uint32
	atime, mtime unix.Timespec
}

func (d mergeDirMeta) times() [2]unix.Timespec { return [2]unix.Timespec{d.atime, d.mtime} }

// dir applies the upper directory name of up to ws.
func (m *merger) dir(up, ws int, rel, name string, st *unix.Stat_t) error {
	d, err := m.openUpperDir(up, name, mergeRel(rel, name), st)
	if err != nil {
		return err
	}
	defer unix.Close(d.fd)
	var wst unix.Stat_t
	present := true
	if err := unix.Fstatat(ws, name, &wst, unix.AT_SYMLINK_NOFOLLOW); err == unix.ENOENT {
		present = false
	} else if err != nil {
		return fmt.Errorf("stat in the workspace: %w", err)
	}
	wsMode := uint32(0)
	if present && wst.Mode&unix.S_IFMT == unix.S_IFDIR {
		wsMode = wst.Mode
	}
	m.dirSetID(&d, up, wsMode)
	if present && (wst.Mode&unix.S_IFMT != unix.S_IFDIR || m.opaque(d.fd)) {
		// Replaced whole. The workspace side goes first, the opaque mark
		// (with the other overlay xattrs, below) only after: a merge killed
		// in between still knows to clear it, and one killed later sees a
		// plain directory whose workspace side holds only what this merge
		// put there, which must not be deleted again.
		if err := m.removeAll(ws, name); err != nil {
			return fmt.Errorf("remove what the directory replaces: %w", err)
		}
		present = false
	}
	if err := m.stripFd(d.fd, true); err != nil {
		return err
	}
	if !present && m.moveDir(up, ws, name, &d) {
		return nil
	}
	return m.mergeInto(up, ws, rel, name, &d, present, &wst)
}

// openUpperDir opens the upper directory name of parent (rel, st) for
// the merge, readable and writable, with its mode and times from before
// the merge: from the stash an earlier, interrupted merge left, or else
// from st, stashed now.
func (m *merger) openUpperDir(parent int, name, rel string, st *unix.Stat_t) (mergeUpperDir, error) {
	d := mergeUpperDir{fd: -1, rel: rel, ino: st.Ino, meta: mergeMetaOf(st), cur: st.Mode & 0o7777}
	if d.cur&0o700 != 0o700 {
		// Widened before it can be stashed (setting a user xattr needs
		// write access), so recorded for undoing first.
		m.writePending(rel, st.Ino, d.cur)
		if err := m.chmodNoFollow(parent, name, d.cur|0o700); err != nil {
			return d, fmt.Errorf("make it readable: %w", err)
		}
		d.cur |= 0o700
	}
	fd, err := unix.Openat(parent, name, mergeDirFlags, 0)
	if err != nil {
		return d, fmt.Errorf("open: %w", err)
	}
	d.fd = fd
	if !m.readStash(fd, &d.meta) {
		m.writeStash(fd, d.meta)
	}
	return d, nil
}

func mergeMetaOf(st *unix.Stat_t) mergeDirMeta {
	return mergeDirMeta{mode: st.Mode & 0o7777, atime: st.Atim, mtime: st.Mtim}
}

// openDir opens the directory name of parent (st), first giving it u+rwx
// if it lacks them: the command may have made it unreadable, and the merge
// must list it and move entries in or out. It is for the upper root and
// the workspace, whose modes need no undoing (see openUpperDir).
func (m *merger) openDir(parent int, name string, st *unix.Stat_t) (int, error) {
	if st.Mode&0o700 != 0o700 {
		if err := m.chmodNoFollow(parent, name, st.Mode&0o7777|0o700); err != nil {
			return -1, err
		}
	}
	return unix.Openat(parent, name, mergeDirFlags, 0)
}

func (m *merger) readStash(fd int, meta *mergeDirMeta) bool {
	var b [mergeStashLen + 1]byte
	n, err := unix.Fgetxattr(fd, mergeStash, b[:])
	if err != nil || n != mergeStashLen || b[0] != mergeStashV1 {
		return false
	}
	le := binary.LittleEndian
	meta.mode = le.Uint32(b[1:]) & 0o7777
	meta.atime = unix.Timespec{Sec: int64(le.Uint64(b[5:])), Nsec: int64(le.Uint64(b[13:]))}
	meta.mtime = unix.Timespec{Sec: int64(le.Uint64(b[21:])), Nsec: int64(le.Uint64(b[29:]))}
	return true
}

// writeStash keeps meta on the upper directory fd. Without it (a file
// system refusing it), a merge killed and run again would give the
// workspace directory the times its own moves left: worth no failure.
func (m *merger) writeStash(fd int, meta mergeDirMeta) {
	var b [mergeStashLen]byte
	le := binary.LittleEndian
	b[0] = mergeStashV1
	le.PutUint32(b[1:], meta.mode)
	le.PutUint64(b[5:], uint64(meta.atime.Sec))
	le.PutUint64(b[13:], uint64(meta.atime.Nsec))
	le.PutUint64(b[21:], uint64(meta.mtime.Sec))
	le.PutUint64(b[29:], uint64(meta.mtime.Nsec))
	m.tick()
	_ = unix.Fsetxattr(fd, mergeStash, b[:], 0)
}

// opaque reports whether the upper directory fd is opaque.
func (m *merger) opaque(fd int) bool {
	var b [2]byte
	n, err := unix.Fgetxattr(fd, OpaqueXattr, b[:])
	return err == nil && n == 1 && b[0] == 'y'
}

// moveDir moves the upper directory d, which ws lacks, into ws by one
// rename, once its subtree is what the workspace must get: whiteouts in it
// dropped (there is nothing under them to delete), overlay xattrs removed,
// modes and times as the command left them. It reports false when the
// directory must be merged entry by entry instead: across mounts, or when
// something in it cannot be applied (the entry-by-entry merge then reports
// it, and leaves it in upper); d is then ready for that again.
func (m *merger) moveDir(up, ws int, name string, d *mergeUpperDir) bool {
	if m.forceCopy || (!m.skipMountCheck && !m.sameMount(ws)) {
		return false
	}
	n, ok := m.sanitize(d.fd, d.rel)
	if ok {
		ok = m.finishUpper(d) == nil
	}
	if ok && m.move(up, ws, name) == nil {
		m.stats.Entries += n
		m.stats.Renamed++
		return true
	}
	if d.cur&0o700 != 0o700 {
		m.tick()
		if unix.Fchmod(d.fd, d.cur|0o700) == nil {
			d.cur |= 0o700
		}
	}
	m.writeStash(d.fd, d.meta)
	// sanitize listed it: the merge lists it again from the start.
	_, _ = unix.Seek(d.fd, 0, 0)
	return false
}

// sameMount reports whether a rename from upper into the workspace
// directory ws can work: both on one mount. Unknown counts as yes (the
// rename then tells).
func (m *merger) sameMount(ws int) bool {
	id := mergeMountID(ws)
	return m.upMnt == 0 || id == 0 || id == m.upMnt
}

func mergeMountID(fd int) uint64 {
	var stx unix.Statx_t
	err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &stx)
	if err != nil || stx.Mask&unix.STATX_MNT_ID == 0 {
		return 0
	}
	return stx.Mnt_id
}

// sanitize readies the subtree of the upper directory fd (rel) for moving
// whole (see moveDir), reporting how many entries it holds and whether all
// of them can go. It records no error: what it cannot do, the
// entry-by-entry merge that follows does not either, and reports.
func (m *merger) sanitize(fd int, rel string) (int, bool) {
	names, types, err := m.readNames(fd)
	if err != nil {
		return 0, false
	}
	n := 0
	for i, name := range names {
		var st unix.Stat_t
		if !mergeNonDirType(types[i]) && unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return n, false
		}
		n++
		if types[i] == unix.DT_FIFO || types[i] == unix.DT_SOCK {
			if m.dropSpecial(fd, name, mergeRel(rel, name)) != nil {
				return n, false
			}
			continue
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFCHR, unix.S_IFBLK:
			if st.Mode&unix.S_IFMT == unix.S_IFBLK || st.Rdev != 0 {
				return n, false
			}
			m.tick()
			if unix.Unlinkat(fd, name, 0) != nil {
				return n, false
			}
			m.stats.Removed++
		case unix.S_IFDIR:
			c, ok := m.sanitizeDir(fd, name, mergeRel(rel, name), &st)
			n += c
			if !ok {
				return n, false
			}
		default:
			if m.clearSetID(fd, name, mergeRel(rel, name), &st) != nil || m.stripPath(fd, name, mergeRel(rel, name), &st) != nil {
				return n, false
			}
		}
	}
	return n, true
}

func (m *merger) sanitizeDir(parent int, name, rel string, st *unix.Stat_t) (int, bool) {
	d, err := m.openUpperDir(parent, name, rel, st)
	if err != nil {
		return 0, false
	}
	defer unix.Close(d.fd)
	m.dirSetID(&d, parent, 0)
	if m.stripFd(d.fd, true) != nil {
		return 0, false
	}
	n, ok := m.sanitize(d.fd, rel)
	return n, ok && m.finishUpper(&d) == nil
}

// finishUpper gives the upper directory d back its mode and times before
// the merge, and drops the stash, for it to move whole. The stash goes
// before the mode (removing a user xattr needs write access), so a mode
// to narrow is recorded for undoing first.
func (m *merger) finishUpper(d *mergeUpperDir) error {
	ts := d.meta.times()
	m.tick()
	if err := mergeFutimens(d.fd, &ts); err != nil {
		return err
	}
	if d.cur != d.meta.mode {
		m.writePending(d.rel, d.ino, d.meta.mode)
	}
	m.tick()
	if err := unix.Fremovexattr(d.fd, mergeStash); err != nil && err != unix.ENODATA && err != unix.ENOTSUP {
		return err
	}
	if d.cur != d.meta.mode {
		m.tick()
		if err := unix.Fchmod(d.fd, d.meta.mode); err != nil {
			return err
		}
		d.cur = d.meta.mode
	}
	return nil
}

// mergeInto merges the upper directory d into ws/name (present: a
// directory already, wst; else made here), then gives that the upper
// directory's mode, times and xattrs, and only then removes d from upper.
func (m *merger) mergeInto(up, ws int, rel, name string, d *mergeUpperDir, present bool, wst *unix.Stat_t) error {
	if !present {
		m.tick()
		if err := unix.Mkdirat(ws, name, 0o700); err != nil {
			return fmt.Errorf("create in the workspace: %w", err)
		}
		m.stats.Copied++
		*wst = unix.Stat_t{Mode: unix.S_IFDIR | 0o700}
	}
	w, err := m.openDir(ws, name, wst)
	if err != nil {
		return fmt.Errorf("open in the workspace: %w", err)
	}
	defer unix.Close(w)
	cur := wst.Mode&0o7777 | 0o700
	before := m.nerr
	m.mergeDir(d.fd, w, mergeRel(rel, name))
	if err := m.syncXattrs(d.fd, w, present); err != nil {
		return fmt.Errorf("extended attributes: %w", err)
	}
	if !present || cur != d.meta.mode {
		m.tick()
		if err := unix.Fchmod(w, d.meta.mode); err != nil {
			return fmt.Errorf("set the mode in the workspace: %w", err)
		}
	}
	ts := d.meta.times()
	m.tick()
	if err := mergeFutimens(w, &ts); err != nil {
		return fmt.Errorf("set the times in the workspace: %w", err)
	}
	m.tick()
	err = unix.Unlinkat(up, name, unix.AT_REMOVEDIR)
	if err != nil && !((err == unix.ENOTEMPTY || err == unix.EEXIST) && m.nerr > before) {
		return fmt.Errorf("remove from the upper layer: %w", err)
	}
	return nil
}

// removeAll removes name from the directory dirfd, recursively, through
// descriptors only; absent is fine. It widens directories that lack u+rwx
// on the way, which does not matter for what is removed anyway.
func (m *merger) removeAll(dirfd int, name string) error {
	m.tick()
	uerr := unix.Unlinkat(dirfd, name, 0)
	if uerr == nil || uerr == unix.ENOENT {
		return nil
	}
	// A directory is EISDIR on Linux, EPERM where POSIX has its way.
	var st unix.Stat_t
	if uerr != unix.EISDIR && uerr != unix.EPERM ||
		unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return uerr
	}
	fd, err := m.openDir(dirfd, name, &st)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	names, _, err := m.readNames(fd)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := m.removeAll(fd, n); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	m.tick()
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
		return err
	}
	return nil
}

// readNames lists the directory fd, whole: names, and their types as the
// listing has them (DT_*).
func (m *merger) readNames(fd int) ([]string, []byte, error) {
	if m.dbuf == nil {
		m.dbuf = make([]byte, 32<<10)
	}
	var names []string
	var types []byte
	for {
		n, err := unix.Getdents(fd, m.dbuf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return names, types, err
		}
		names, types = mergeParseDirents(m.dbuf[:n], names, types)
	}
}

// mergeParseDirents appends the entries of a getdents64 buffer (struct
// linux_dirent64: ino, off, reclen, type, name) but "." and "..".
func mergeParseDirents(buf []byte, names []string, types []byte) ([]string, []byte) {
	const nameOff = 19
	for len(buf) >= nameOff {
		reclen := int(binary.NativeEndian.Uint16(buf[16:]))
		if reclen < nameOff || reclen > len(buf) {
			break
		}
		rec := buf[:reclen]
		buf = buf[reclen:]
		name := rec[nameOff:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if binary.NativeEndian.Uint64(rec) == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		names = append(names, string(name))
		types = append(types, rec[18])
	}
	return names, types
}

// chmodNoFollow sets the mode of name in dirfd, never following it: by an
// O_PATH descriptor's /proc link, which names that inode itself.
func (m *merger) chmodNoFollow(dirfd int, name string, mode uint32) error {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return unix.ELOOP
	}
	m.tick()
	return unix.Chmod(mergeFdPath(fd), mode)
}

func mergeFdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// mergeFutimens is futimens(3): utimensat on the descriptor itself.
func mergeFutimens(fd int, ts *[2]unix.Timespec) error {
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// listXattrs fills m.xbuf with the xattr names (NUL-separated) of: fd,
// when p is empty; p in fd (not followed) when at; else path p (not
// followed).
func (m *merger) listXattrs(fd int, p string, at bool) ([]byte, error) {
	if m.xbuf == nil {
		m.xbuf = make([]byte, 1024)
	}
	for {
		var n int
		var err error
		switch {
		case p == "":
			n, err = unix.Flistxattr(fd, m.xbuf)
		case at:
			n, err = mergeListxattrat(fd, p, m.xbuf)
		default:
			n, err = unix.Llistxattr(p, m.xbuf)
		}
		if err == unix.ERANGE {
			m.xbuf = make([]byte, 2*len(m.xbuf))
			continue
		}
		if err != nil {
			return nil, err
		}
		return m.xbuf[:n], nil
	}
}

// overlayNames are the user.overlay.* names in a listXattrs result; only
// those are made strings.
func overlayNames(list []byte, keepStash bool) []string {
	var out []string
	for len(list) > 0 {
		i := bytes.IndexByte(list, 0)
		if i < 0 {
			i = len(list)
		}
		n := list[:i]
		list = list[min(i+1, len(list)):]
		if bytes.HasPrefix(n, []byte(ovlXattrPrefix)) && !(keepStash && string(n) == mergeStash) {
			out = append(out, string(n))
		}
	}
	return out
}

// stripFd removes the user.overlay.* xattrs of the directory fd, but for
// the stash when keepStash.
func (m *merger) stripFd(fd int, keepStash bool) error {
	list, err := m.listXattrs(fd, "", false)
	if err == unix.ENOTSUP {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list extended attributes: %w", err)
	}
	for _, n := range overlayNames(list, keepStash) {
		m.tick()
		if err := unix.Fremovexattr(fd, n); err != nil && err != unix.ENODATA {
			return fmt.Errorf("remove extended attribute %s: %w", n, err)
		}
	}
	return nil
}

// stripPath removes the user.overlay.* xattrs of the non-directory name
// in dirfd (rel, st maybe not fetched yet), widening a read-only file for
// it (removing a user xattr needs write access) and narrowing it back.
func (m *merger) stripPath(dirfd int, name, rel string, st *unix.Stat_t) error {
	list, err := m.listXattrsAt(dirfd, name)
	if err == unix.ENOTSUP {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list extended attributes: %w", err)
	}
	widened := false
	for _, n := range overlayNames(list, false) {
		m.tick()
		err := m.removeXattrAt(dirfd, name, n)
		if (err == unix.EACCES || err == unix.EPERM) && !widened && mergeStat(dirfd, name, st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			m.writePending(rel, st.Ino, st.Mode&0o7777)
			if err = m.chmodNoFollow(dirfd, name, st.Mode&0o7777|0o200); err == nil {
				widened = true
				defer func() { _ = m.chmodNoFollow(dirfd, name, st.Mode&0o7777) }()
				m.tick()
				err = m.removeXattrAt(dirfd, name, n)
			}
		}
		if err != nil && err != unix.ENODATA {
			return fmt.Errorf("remove extended attribute %s: %w", n, err)
		}
	}
	return nil
}

// listXattrsAt is listXattrs for name in dirfd, not followed: by
// listxattrat (Linux 6.13), else through the directory's /proc link.
func (m *merger) listXattrsAt(dirfd int, name string) ([]byte, error) {
	if !m.noAt {
		list, err := m.listXattrs(dirfd, name, true)
		if err != unix.ENOSYS && err != unix.EPERM {
			return list, err
		}
		// Missing, or refused by a seccomp filter (which may say EPERM)
		// where the /proc path works.
		list, perr := m.listXattrs(-1, mergeFdPath(dirfd)+"/"+name, false)
		if perr == nil {
			m.noAt = true
		}
		return list, perr
	}
	return m.listXattrs(-1, mergeFdPath(dirfd)+"/"+name, false)
}

// removeXattrAt removes attr from name in dirfd, not followed, as
// listXattrsAt reads them.
func (m *merger) removeXattrAt(dirfd int, name, attr string) error {
	if !m.noAt {
		if err := mergeRemovexattrat(dirfd, name, attr); err != unix.ENOSYS && err != unix.EPERM {
			return err
		}
	}
	return unix.Lremovexattr(mergeFdPath(dirfd)+"/"+name, attr)
}

// mergeListxattrat is listxattrat(2): the xattr names of name in dirfd,
// not followed.
func mergeListxattrat(dirfd int, name string, buf []byte) (int, error) {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return 0, err
	}
	var b unsafe.Pointer
	if len(buf) > 0 {
		b = unsafe.Pointer(&buf[0])
	}
	n, _, e := unix.Syscall6(unix.SYS_LISTXATTRAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
		unix.AT_SYMLINK_NOFOLLOW, uintptr(b), uintptr(len(buf)), 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// mergeRemovexattrat is removexattrat(2): attr removed from name in dirfd,
// not followed.
func mergeRemovexattrat(dirfd int, name, attr string) error {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return err
	}
	a, err := unix.BytePtrFromString(attr)
	if err != nil {
		return err
	}
	_, _, e := unix.Syscall6(unix.SYS_REMOVEXATTRAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
		unix.AT_SYMLINK_NOFOLLOW, uintptr(unsafe.Pointer(a)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// syncXattrs gives dst the xattrs of src but the overlay's, and with prune
// (dst not new) drops dst's other user.* ones src lacks: the command
// removed them. Only user.* failures count: others (security.*, trusted.*,
// system.*) may need privileges this process lacks, or be set by the
// kernel itself, and a workspace file system without xattrs cannot keep
// any, which is no failure either.
func (m *merger) syncXattrs(src, dst int, prune bool) error {
	list, err := m.listXattrs(src, "", false)
	if err == unix.ENOTSUP {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	var names []string
	for _, n := range strings.Split(strings.TrimSuffix(string(list), "\x00"), "\x00") {
		if n != "" && !strings.HasPrefix(n, ovlXattrPrefix) {
			names = append(names, n)
		}
	}
	for _, n := range names {
		v, err := m.getXattr(src, n)
		if err == nil {
			m.tick()
			err = unix.Fsetxattr(dst, n, v, 0)
		}
		if err != nil && err != unix.ENODATA && err != unix.ENOTSUP && strings.HasPrefix(n, "user.") {
			return fmt.Errorf("set %s: %w", n, err)
		}
	}
	if !prune {
		return nil
	}
	have, err := m.listXattrs(dst, "", false)
	if err != nil {
		return nil
	}
	for _, n := range strings.Split(string(have), "\x00") {
		if strings.HasPrefix(n, "user.") && !strings.HasPrefix(n, ovlXattrPrefix) && !mergeHas(names, n) {
			m.tick()
			if err := unix.Fremovexattr(dst, n); err != nil && err != unix.ENODATA {
				return fmt.Errorf("remove %s: %w", n, err)
			}
		}
	}
	return nil
}

func mergeHas(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// getXattr is the value of name on fd, in m.vbuf.
func (m *merger) getXattr(fd int, name string) ([]byte, error) {
	if m.vbuf == nil {
		m.vbuf = make([]byte, 1024)
	}
	for {
		n, err := unix.Fgetxattr(fd, name, m.vbuf)
		if err == unix.ERANGE {
			m.vbuf = make([]byte, 2*len(m.vbuf))
			continue
		}
		if err != nil {
			return nil, err
		}
		return m.vbuf[:n], nil
	}
}

// copyNonDir copies the upper non-directory name of up (rel) into ws (the
// cross-device fallback), replacing what ws has there.
func (m *merger) copyNonDir(up, ws int, rel, name string, st *unix.Stat_t) error {
	var err error
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFSOCK:
		return nil
	case unix.S_IFREG:
		err = m.copyFile(up, ws, rel, name, st)
	case unix.S_IFLNK:
		err = m.copySymlink(up, ws, name, st)
	case unix.S_IFIFO:
		err = m.copySpecial(ws, name, st, func(tmp string) error { return unix.Mkfifoat(ws, tmp, 0o600) })
	default:
		err = fmt.Errorf("cannot copy file type %#o", st.Mode&unix.S_IFMT)
	}
	if err == nil {
		m.stats.Copied++
	}
	return err
}

// mergeTmpName is where the copy of name is made in its target directory:
// derived from name alone, so a merge run again after a kill finds and
// replaces its own leftover.
func mergeTmpName(name string) string {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return mergeTmpPrefix + strconv.FormatUint(h, 36)
}

// createTmp runs create, which makes tmp in ws, removing a leftover tmp
// first if there is one.
func (m *merger) createTmp(ws int, tmp string, create func() (int, error)) (int, error) {
	m.tick()
	fd, err := create()
	if err == unix.EEXIST {
		if err = m.removeAll(ws, tmp); err == nil {
			m.tick()
			fd, err = create()
		}
	}
	return fd, err
}

// install renames the finished copy tmp over name in ws.
func (m *merger) install(ws int, tmp, name string) error {
	m.tick()
	err := unix.Renameat(ws, tmp, ws, name)
	if err == unix.EISDIR {
		if err = m.removeAll(ws, name); err == nil {
			m.tick()
			err = unix.Renameat(ws, tmp, ws, name)
		}
	}
	if err != nil {
		_ = unix.Unlinkat(ws, tmp, 0)
		return fmt.Errorf("rename the copy into place: %w", err)
	}
	return nil
}

// copyFile copies the upper regular file name of up into ws, data, xattrs,
// owner (as root), mode and times.
func (m *merger) copyFile(up, ws int, rel, name string, st *unix.Stat_t) error {
	src, err := m.openUpperFile(up, name, rel, st)
	if err != nil {
		return fmt.Errorf("open to copy: %w", err)
	}
	defer unix.Close(src)
	tmp := mergeTmpName(name)
	dst, err := m.createTmp(ws, tmp, func() (int, error) {
		return unix.Openat(ws, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	})
	if err != nil {
		return fmt.Errorf("create the copy: %w", err)
	}
	err = m.fillCopy(src, dst, ws, tmp, st)
	if cerr := unix.Close(dst); err == nil {
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(ws, tmp, 0)
		return fmt.Errorf("copy: %w", err)
	}
	return m.install(ws, tmp, name)
}

// openUpperFile opens the upper file name (rel) for reading, making it
// readable for that moment if the command made it unreadable.
func (m *merger) openUpperFile(up int, name, rel string, st *unix.Stat_t) (int, error) {
	const flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NOCTTY
	fd, err := unix.Openat(up, name, flags, 0)
	if err != unix.EACCES {
		return fd, err
	}
	m.writePending(rel, st.Ino, st.Mode&0o7777)
	if err := m.chmodNoFollow(up, name, st.Mode&0o7777|0o400); err != nil {
		return -1, err
	}
	fd, err = unix.Openat(up, name, flags, 0)
	if cerr := m.chmodNoFollow(up, name, st.Mode&0o7777); err == nil && cerr != nil {
		_ = unix.Close(fd)
		return -1, cerr
	}
	return fd, err
}

// fillCopy makes dst (tmp in ws) a copy of src (st), synced so the name
// does not outlive its data in a crash once upper's copy is gone.
func (m *merger) fillCopy(src, dst, ws int, tmp string, st *unix.Stat_t) error {
	m.tick()
	if err := m.copyData(dst, src); err != nil {
		return err
	}
	if err := m.syncXattrs(src, dst, false); err != nil {
		return fmt.Errorf("extended attributes: %w", err)
	}
	if err := m.chownLike(ws, tmp, st); err != nil {
		return err
	}
	m.tick()
	if err := unix.Fchmod(dst, st.Mode&0o7777); err != nil {
		return err
	}
	ts := [2]unix.Timespec{st.Atim, st.Mtim}
	m.tick()
	if err := mergeFutimens(dst, &ts); err != nil {
		return err
	}
	return unix.Fsync(dst)
}

// copyData copies src to dst from their offsets: copy_file_range (which
// may share blocks), else read and write.
func (m *merger) copyData(dst, src int) error {
	for {
		n, err := unix.CopyFileRange(src, nil, dst, nil, 1<<30, 0)
		if err == unix.EINTR {
			continue
		}
		if err == nil && n > 0 {
			continue
		}
		if err == nil {
			return nil
		}
		if err != unix.EXDEV && err != unix.EINVAL && err != unix.ENOSYS && err != unix.EOPNOTSUPP && err != unix.EPERM {
			return err
		}
		break
	}
	if m.cbuf == nil {
		m.cbuf = make([]byte, 128<<10)
	}
	for {
		n, err := unix.Read(src, m.cbuf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return err
		}
		for b := m.cbuf[:n]; len(b) > 0; {
			w, err := unix.Write(dst, b)
			if err != nil && err != unix.EINTR {
				return err
			}
			b = b[max(w, 0):]
		}
	}
}

// chownLike gives the copy tmp the upper entry's owner when running as
// root; any other user makes copies it owns, as the command's entries are.
func (m *merger) chownLike(ws int, tmp string, st *unix.Stat_t) error {
	if os.Geteuid() != 0 {
		return nil
	}
	m.tick()
	if err := unix.Fchownat(ws, tmp, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("set the owner: %w", err)
	}
	return nil
}

// copySymlink recreates the upper symbolic link name of up in ws, with the
// same target (never followed) and times.
func (m *merger) copySymlink(up, ws int, name string, st *unix.Stat_t) error {
	target, err := m.readlink(up, name)
	if err != nil {
		return fmt.Errorf("read the link: %w", err)
	}
	return m.copySpecial(ws, name, st, func(tmp string) error { return unix.Symlinkat(target, ws, tmp) })
}

func (m *merger) readlink(dirfd int, name string) (string, error) {
	if m.lbuf == nil {
		m.lbuf = make([]byte, 256)
	}
	for {
		n, err := unix.Readlinkat(dirfd, name, m.lbuf)
		if err != nil {
			return "", err
		}
		if n < len(m.lbuf) {
			return string(m.lbuf[:n]), nil
		}
		m.lbuf = make([]byte, 2*len(m.lbuf))
	}
}

// copySpecial makes a symbolic link or fifo (mk, at a temporary name)
// in ws like the upper one (st), and renames it over name. A fifo gets
// st's mode (made without following it: a link's mode means nothing).
func (m *merger) copySpecial(ws int, name string, st *unix.Stat_t, mk func(tmp string) error) error {
	tmp := mergeTmpName(name)
	if _, err := m.createTmp(ws, tmp, func() (int, error) { return -1, mk(tmp) }); err != nil {
		return fmt.Errorf("create the copy: %w", err)
	}
	err := m.chownLike(ws, tmp, st)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFLNK {
		err = m.chmodNoFollow(ws, tmp, st.Mode&0o7777)
	}
	if err == nil {
		ts := []unix.Timespec{st.Atim, st.Mtim}
		m.tick()
		err = unix.UtimesNanoAt(ws, tmp, ts, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		_ = unix.Unlinkat(ws, tmp, 0)
		return fmt.Errorf("copy: %w", err)
	}
	return m.install(ws, tmp, name)
}
