//go:build linux

package sysview

import (
	"errors"

	"golang.org/x/sys/unix"
)

// inotifyWatch is dirWatch on inotify.
type inotifyWatch struct{ fd int }

// newDirWatch is an empty set of watches, or nil without inotify.
func newDirWatch() dirWatch {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	return &inotifyWatch{fd: fd}
}

// watchMask is every change of a directory's entries or of what they hold:
// added, removed, renamed, written, chmod'ed or chown'ed (IN_ATTRIB), and
// the directory itself removed or moved. Reads are not changes.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_DELETE_SELF | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_MOVE_SELF | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_ONLYDIR

func (w *inotifyWatch) add(dir string) error {
	_, err := unix.InotifyAddWatch(w.fd, dir, watchMask)
	return err
}

// changed: any event at all (a change, a queue overflow, a watch the
// kernel removed), or a read that fails otherwise than with nothing
// pending, means the watched directories can no longer be trusted.
func (w *inotifyWatch) changed() bool {
	var buf [4096]byte
	for {
		_, err := unix.Read(w.fd, buf[:])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return false
		}
		return true
	}
}

func (w *inotifyWatch) close() { _ = unix.Close(w.fd) }
