//go:build linux

package checkpoint

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// syncManyCopies is how many copied objects are synced one by one; past
// it, one syncfs of the store's file system costs less. Linked objects
// need only their directories synced, however many.
const syncManyCopies = 16

// syncObjects makes the new objects' data durable: each copy synced, or
// one syncfs for a call that copied many (a store on another file system
// than the workspace). all says the syncfs made everything durable,
// directories included.
func syncObjects(dir string, fresh []stored) (all bool, err error) {
	copies := 0
	for _, o := range fresh {
		if !o.linked {
			copies++
		}
	}
	if copies <= syncManyCopies {
		return false, fsyncCopies(fresh)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	return true, unix.Syncfs(fd)
}

// linkInode links the open file f's inode at p, through its /proc link
// (linkat of a descriptor needs no privilege that way): the very inode
// that was hashed, whatever its name is now.
func linkInode(f *os.File, p string) error {
	return unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, p, unix.AT_SYMLINK_FOLLOW)
}
