//go:build linux

package pathguard

import (
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ReadDir lists the directory rel, sorted by name, as os.ReadDir does. The
// directory is opened as every name is (no link followed), and each
// entry's information is taken relative to that descriptor without
// following a link (fstatat), one system call an entry, never by path.
func (r *Root) ReadDir(rel string) ([]os.DirEntry, error) {
	f, err := r.OpenFile(rel, os.O_RDONLY|dirFlag, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	dir := int(f.Fd())
	out := make([]os.DirEntry, 0, len(names))
	for _, n := range names {
		// Sys is a *syscall.Stat_t, as os.ReadDir's: callers read Nlink,
		// the inode and the device from it (hard links to a Read-denied
		// file, hostfs.SigOf), and a *unix.Stat_t would pass their type
		// assertions by, failing open. The kernel fills one struct stat;
		// the two Go types are that struct (sizes checked below).
		st := new(syscall.Stat_t)
		if err := unix.Fstatat(dir, n, (*unix.Stat_t)(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone meanwhile
		}
		out = append(out, dirEntry{sysStatInfo(n, st)})
	}
	slices.SortFunc(out, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// The two stat types are one kernel struct: a build where their sizes
// differ fails here rather than reading one as the other.
var (
	_ [unsafe.Sizeof(syscall.Stat_t{}) - unsafe.Sizeof(unix.Stat_t{})]byte
	_ [unsafe.Sizeof(unix.Stat_t{}) - unsafe.Sizeof(syscall.Stat_t{})]byte
)

// dirEntry is an entry of ReadDir with its information.
type dirEntry struct{ fi fs.FileInfo }

func (d dirEntry) Name() string               { return d.fi.Name() }
func (d dirEntry) IsDir() bool                { return d.fi.IsDir() }
func (d dirEntry) Type() fs.FileMode          { return d.fi.Mode().Type() }
func (d dirEntry) Info() (fs.FileInfo, error) { return d.fi, nil }

// fileInfo is an fs.FileInfo from ReadDir's fstatat or Root.Stat's fstat;
// Sys is the *syscall.Stat_t, as os gives it.
type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
	sys   any
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.size }
func (fi *fileInfo) Mode() fs.FileMode  { return fi.mode }
func (fi *fileInfo) ModTime() time.Time { return fi.mtime }
func (fi *fileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi *fileInfo) Sys() any           { return fi.sys }

// sysStatInfo is os's reading of a stat (os.fillFileStatFromSys), Sys the
// *syscall.Stat_t itself, as os.File.Stat's.
func sysStatInfo(name string, st *syscall.Stat_t) *fileInfo {
	return &fileInfo{name: name, size: st.Size, mode: statMode(st.Mode), mtime: time.Unix(st.Mtim.Unix()), sys: st}
}

// statMode is a stat's mode as an fs.FileMode.
func statMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
