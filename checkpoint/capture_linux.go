//go:build linux

package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// captureAt is capture for the entry name of the directory dirfd, by
// plain system calls on that descriptor: the hot path of a Bash call's
// recording, a thousand files in a few system calls each (an os.Root
// walks the path again for every call, and an os.File registers with the
// poller). name is never followed.
func (s Store) captureAt(dirfd int, name string, fresh *[]stored) (Entry, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.ENOENT || err == unix.ENOTDIR {
		return Entry{Kind: Absent}, nil
	}
	if err != nil {
		return Entry{}, err
	}
	mode := unixMode(st.Mode)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return Entry{Kind: Dir, Mode: mode}, nil
	case unix.S_IFLNK:
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return Entry{}, err
		}
		return Entry{Kind: Symlink, Target: string(buf[:n])}, nil
	case unix.S_IFREG:
	default:
		return Entry{Kind: Other, Mode: mode}, nil
	}
	sum, err := s.storeAt(dirfd, name, &st, fresh)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Kind: File, Mode: mode, Size: st.Size, Sum: sum}, nil
}

// unixMode is a stat mode's permission, set-id and sticky bits, as an
// fs.FileMode's (what capture records).
func unixMode(m uint32) uint32 {
	fm := fs.FileMode(m & 0o777)
	if m&unix.S_ISUID != 0 {
		fm |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		fm |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		fm |= fs.ModeSticky
	}
	return uint32(fm)
}

var hashBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// storeAt hashes the regular file name of dirfd (st, as fstatat saw it)
// and, unless fresh is nil, stores it (a link to its inode, else a copy),
// refusing a file swapped for another meanwhile.
func (s Store) storeAt(dirfd int, name string, st *unix.Stat_t, fresh *[]stored) (string, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var ost unix.Stat_t
	if err := unix.Fstat(fd, &ost); err != nil {
		return "", err
	}
	if ost.Dev != st.Dev || ost.Ino != st.Ino {
		return "", errors.New("changed while being recorded")
	}
	sum, err := hashFD(fd)
	if err != nil {
		return "", err
	}
	if fresh == nil {
		return sum, nil
	}
	p := s.ObjectPath(sum)
	ok, damaged := reuse(p, sum, ost.Size)
	if ok {
		return sum, nil
	}
	if damaged {
		_ = os.Remove(p)
	}
	if err = s.linkObject(fd, p); err == nil {
		*fresh = append(*fresh, stored{path: p, linked: true})
		return sum, nil
	}
	// Another file system: a copy, through an os.File of a duplicate.
	dup, err := unix.Dup(fd)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(dup), name)
	defer f.Close()
	return sum, s.putObject(f, sum, ost.Size, fresh)
}

// hashFD is the SHA-256 of what is left to read from fd, in hex.
func hashFD(fd int) (string, error) {
	h := sha256.New()
	bp := hashBufs.Get().(*[]byte)
	defer hashBufs.Put(bp)
	for {
		n, err := unix.Read(fd, *bp)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if n == 0 {
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		h.Write((*bp)[:n])
	}
}

// linkObject links fd's inode into the store at p (making the objects'
// directory if it is missing); an object already there is as good.
func (s Store) linkObject(fd int, p string) error {
	src := "/proc/self/fd/" + strconv.Itoa(fd)
	err := unix.Linkat(unix.AT_FDCWD, src, unix.AT_FDCWD, p, unix.AT_SYMLINK_FOLLOW)
	if err == unix.ENOENT {
		if err = os.MkdirAll(s.objects(), 0o700); err == nil {
			err = unix.Linkat(unix.AT_FDCWD, src, unix.AT_FDCWD, p, unix.AT_SYMLINK_FOLLOW)
		}
	}
	if err == unix.EEXIST {
		return nil
	}
	return err
}
