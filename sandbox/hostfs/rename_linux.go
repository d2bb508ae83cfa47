//go:build linux

package hostfs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// RenameNoReplace renames src to dst unless dst exists (EEXIST then).
func RenameNoReplace(src, dst string) error {
	return unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
}

// EmptyDir reports whether path is a directory (not a link to one) with
// nothing in it. Raw calls: after every command it checks each of a
// dozen placeholders, and an *os.File would add its poller's registration
// to each.
func EmptyDir(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var buf [1024]byte
	for {
		n, err := unix.Getdents(fd, buf[:])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return false
		case n == 0:
			return true
		}
		// ParseDirent leaves out "." and "..".
		if _, found, _ := unix.ParseDirent(buf[:n], 1, nil); found > 0 {
			return false
		}
	}
}
