//go:build linux

package pathguard

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Root is the canonical workspace opened for the file tools' I/O. Every
// name given to it is relative to the workspace and is opened exactly as
// the guard checked it: no component may be a symbolic link (the guard's
// answer has none) and none may climb out with "..". Each open is one
// openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS
// relative to the workspace's descriptor. Where openat2 is missing
// (ENOSYS: kernels before 5.6; EPERM: a seccomp filter refusing it) the
// same name is walked one component at a time from that descriptor with
// O_NOFOLLOW: the same links are refused, at the cost of a system call per
// component, so the fallback keeps the guarantee rather than failing
// closed and leaving the file tools unusable there. A link found on the
// way is ErrPathChanged.
//
// Its methods mirror os.Root's, but os.Root follows links that stay inside
// the root, which is what let a swapped-in link reach a denied file.
type Root struct {
	fd   int // O_PATH descriptor of the canonical workspace
	name string
}

// resolveFlags are openat2's: stay under the workspace's descriptor and
// follow no symbolic link (nor /proc's magic links) on the way.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

const dirFlag = unix.O_DIRECTORY

// walkDirFlags open a directory on the walk: a descriptor to look names up
// in, never through a link.
const walkDirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// forceWalk makes every open take the component walk (tests of the
// fallback on kernels that have openat2).
var forceWalk = false

// haveOpenat2 is whether this kernel (and its seccomp filter) runs
// openat2, probed once on the first root opened.
var haveOpenat2 = sync.OnceValue(func() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveFlags})
	if err != nil {
		return !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM)
	}
	_ = unix.Close(fd)
	return true
})

// OpenRoot opens the canonical workspace canonWS (CanonicalWorkspace's or
// ResolveWithWorkspace's answer).
func OpenRoot(canonWS string) (*Root, error) {
	fd, err := unix.Open(canonWS, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open workspace", Path: canonWS, Err: err}
	}
	return &Root{fd: fd, name: canonWS}, nil
}

// openWorkspace opens the workspace as a Root named by its canonical path;
// abs is the workspace as given, made absolute (and so clean). When no
// component of abs is a link (one openat2 with RESOLVE_NO_SYMLINKS from
// the file system's root succeeds), abs is its own canonical path, what
// filepath.EvalSymlinks would answer: one system call in place of one a
// component, a stat and an open. Otherwise (a link on the way, no openat2)
// the portable way resolves it.
func openWorkspace(workspace string) (*Root, string, error) {
	if workspace != "" && !forceWalk && haveOpenat2() {
		if abs, err := filepath.Abs(workspace); err == nil {
			how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
			if fd, err := unix.Openat2(unix.AT_FDCWD, abs, how); err == nil {
				return &Root{fd: fd, name: abs}, abs, nil
			}
		}
	}
	return openWorkspacePortable(workspace)
}

// Name is the workspace the root was opened on.
func (r *Root) Name() string { return r.name }

// Close releases the workspace's descriptor.
func (r *Root) Close() error {
	if r.fd < 0 {
		return os.ErrClosed
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// OpenFile opens rel with flag (os.O_*) and, when it creates the file, perm.
func (r *Root) OpenFile(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	fd, err := r.open("open", rel, flag, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(r.name, rel)), nil
}

// Stat is rel's information; a link as its last component is
// ErrPathChanged like any other. It is the descriptor's own fstat, with no
// os.File made around it (whose making asks the descriptor's flags, a
// system call, and sets a finalizer): what os.File.Stat answers, Sys the
// *syscall.Stat_t, in two system calls after the open; but not os's type,
// so os.SameFile does not apply to it (Lstat's is os's).
func (r *Root) Stat(rel string) (fs.FileInfo, error) {
	fd, err := r.open("stat", rel, unix.O_PATH, 0)
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	err = syscall.Fstat(fd, &st)
	_ = unix.Close(fd)
	name := filepath.Join(r.name, rel)
	if err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	return sysStatInfo(filepath.Base(name), &st), nil
}

// Lstat is rel's information, of the link itself when the last component
// is one (the directories above it are still never links).
func (r *Root) Lstat(rel string) (fs.FileInfo, error) {
	fd, err := r.open("lstat", rel, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), filepath.Join(r.name, rel))
	defer f.Close()
	return f.Stat()
}

// open is the one open of a name under the root: openat2, or the walk.
func (r *Root) open(op, rel string, flag int, mode uint32) (int, error) {
	c, err := local(op, rel)
	if err != nil {
		return -1, err
	}
	flag |= unix.O_CLOEXEC
	if flag&(unix.O_CREAT|unix.O_TMPFILE) == 0 {
		mode = 0 // openat2 refuses a mode it would not use
	}
	if forceWalk || !haveOpenat2() {
		fd, err := r.walk(c, flag, mode)
		return fd, pathErr(op, rel, err)
	}
	how := &unix.OpenHow{Flags: uint64(flag), Mode: uint64(mode), Resolve: resolveFlags}
	for range 8 {
		fd, err := unix.Openat2(r.fd, c, how)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue // a rename elsewhere raced the lookup: the kernel asks for a retry
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			err = ErrPathChanged
		}
		return fd, pathErr(op, rel, err)
	}
	return -1, pathErr(op, rel, unix.EAGAIN)
}

// walk opens c (clean, local) one component at a time, each relative to
// the descriptor of the one before and with O_NOFOLLOW: openat2's
// RESOLVE_NO_SYMLINKS by hand, for kernels without it.
func (r *Root) walk(c string, flag int, mode uint32) (int, error) {
	parts := strings.Split(c, string(filepath.Separator))
	dir := r.fd
	release := func() {
		if dir != r.fd {
			_ = unix.Close(dir)
		}
	}
	defer func() { release() }()
	for _, p := range parts[:len(parts)-1] {
		fd, err := unix.Openat(dir, p, walkDirFlags, 0)
		if err != nil {
			return -1, linkErr(dir, p, err)
		}
		release()
		dir = fd
	}
	last := parts[len(parts)-1]
	fd, err := unix.Openat(dir, last, flag|unix.O_NOFOLLOW, mode)
	if err != nil {
		return -1, linkErr(dir, last, err)
	}
	if flag&unix.O_PATH != 0 && flag&unix.O_NOFOLLOW == 0 {
		// O_PATH|O_NOFOLLOW opens a link itself; Stat refuses one.
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			_ = unix.Close(fd)
			return -1, ErrPathChanged
		}
	}
	return fd, nil
}

// linkErr is ErrPathChanged when the component name under dir that could
// not be opened is a symbolic link, else err.
func linkErr(dir int, name string, err error) error {
	var st unix.Stat_t
	if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return ErrPathChanged
	}
	return err
}

func pathErr(op, rel string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: rel, Err: err}
}

// dirAt opens rel's directory for an *at call on its last component, which
// it returns: Remove, Rename and MkdirAll act on a name in a directory
// reached without a link.
func (r *Root) dirAt(op, rel string) (int, string, error) {
	c, err := local(op, rel)
	if err != nil {
		return -1, "", err
	}
	base := filepath.Base(c)
	if base == "." {
		return -1, "", pathErr(op, rel, unix.EINVAL)
	}
	fd, err := r.open(op, filepath.Dir(c), unix.O_PATH|unix.O_DIRECTORY, 0)
	return fd, base, err
}

// Remove removes the file or empty directory rel.
func (r *Root) Remove(rel string) error {
	dir, base, err := r.dirAt("remove", rel)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	err = unix.Unlinkat(dir, base, 0)
	if errors.Is(err, unix.EISDIR) {
		err = unix.Unlinkat(dir, base, unix.AT_REMOVEDIR)
	}
	return pathErr("remove", rel, err)
}

// Rename renames oldRel to newRel; a link at newRel is replaced, not
// followed.
func (r *Root) Rename(oldRel, newRel string) error {
	od, ob, err := r.dirAt("rename", oldRel)
	if err != nil {
		return err
	}
	defer unix.Close(od)
	nd, nb, err := r.dirAt("rename", newRel)
	if err != nil {
		return err
	}
	defer unix.Close(nd)
	return pathErr("rename", oldRel, unix.Renameat(od, ob, nd, nb))
}

// MkdirAll makes rel and the directories above it that are missing, with
// perm; a link on the way is ErrPathChanged, never followed.
func (r *Root) MkdirAll(rel string, perm fs.FileMode) error {
	c, err := local("mkdir", rel)
	if err != nil || c == "." {
		return err
	}
	dir := r.fd
	defer func() {
		if dir != r.fd {
			_ = unix.Close(dir)
		}
	}()
	for _, p := range strings.Split(c, string(filepath.Separator)) {
		fd, err := unix.Openat(dir, p, walkDirFlags, 0)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(dir, p, uint32(perm.Perm())); err == nil || errors.Is(err, unix.EEXIST) {
				fd, err = unix.Openat(dir, p, walkDirFlags, 0)
			}
		}
		if err != nil {
			return pathErr("mkdir", rel, linkErr(dir, p, err))
		}
		if dir != r.fd {
			_ = unix.Close(dir)
		}
		dir = fd
	}
	return nil
}

// Mkdir makes the directory rel with perm, in a parent reached without a
// link.
func (r *Root) Mkdir(rel string, perm fs.FileMode) error {
	dir, base, err := r.dirAt("mkdir", rel)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	return pathErr("mkdir", rel, unix.Mkdirat(dir, base, uint32(perm.Perm())))
}

// Symlink makes rel a symbolic link to target (never followed here), in a
// parent reached without a link.
func (r *Root) Symlink(target, rel string) error {
	dir, base, err := r.dirAt("symlink", rel)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	return pathErr("symlink", rel, unix.Symlinkat(target, dir, base))
}

// Readlink is the target of the link rel, in a parent reached without a
// link.
func (r *Root) Readlink(rel string) (string, error) {
	dir, base, err := r.dirAt("readlink", rel)
	if err != nil {
		return "", err
	}
	defer unix.Close(dir)
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, base, buf)
		if err != nil {
			return "", pathErr("readlink", rel, err)
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// Chmod sets rel's permission bits (set-id and sticky too): rel is opened
// as every name is (a link anywhere on it, the last component included,
// is ErrPathChanged) and the mode set on that very inode, through its
// descriptor's /proc name (fchmod refuses an O_PATH descriptor, and one
// opened for reading needs a read permission the owner may have dropped).
func (r *Root) Chmod(rel string, mode fs.FileMode) error {
	fd, err := r.open("chmod", rel, unix.O_PATH, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	m := uint32(mode.Perm())
	for bit, u := range map[fs.FileMode]uint32{fs.ModeSetuid: unix.S_ISUID, fs.ModeSetgid: unix.S_ISGID, fs.ModeSticky: unix.S_ISVTX} {
		if mode&bit != 0 {
			m |= u
		}
	}
	return pathErr("chmod", rel, unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), m, 0))
}
