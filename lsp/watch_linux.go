//go:build linux

package lsp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// fileWatch tells which files under a workspace changed between two
// requests: inotify watches on its directories, read without blocking
// when a request comes, so nothing runs between requests. A server reads
// the files nobody opened from disk once and keeps them; without being
// told, it would answer about a file as it was before an Edit or a
// command changed it.
type fileWatch struct {
	fd   int
	dirs map[int32]string // watch descriptor → directory
}

// watchMask: a directory's entries added, removed or renamed, a file
// written and closed, the directory itself gone.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// unwatched are directories no server needs to hear about: a repository's
// own store, and dependency trees that would take more watches than the
// whole project (a change there is seen when the server restarts).
var unwatched = map[string]bool{".git": true, "node_modules": true}

// errOverflow: more changed than the kernel kept; the server cannot be
// told what, so it must start over.
var errOverflow = errors.New("too many changes in the workspace at once to tell the language server")

func newFileWatch(root string) (*fileWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	w := &fileWatch{fd: fd, dirs: map[int32]string{}}
	if err := w.addTree(root, nil); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// addTree watches dir and the directories below it; the files found are
// recorded in created when it is not nil (a directory that appeared).
func (w *fileWatch) addTree(dir string, created map[string]int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone or unreadable: nothing there to tell
		}
		if !d.IsDir() {
			if created != nil {
				created[p] = changeCreated
			}
			return nil
		}
		if p != dir && unwatched[d.Name()] {
			return filepath.SkipDir
		}
		wd, err := unix.InotifyAddWatch(w.fd, p, watchMask)
		if err != nil {
			return fmt.Errorf("watch %s: %w (fs.inotify.max_user_watches?)", p, err)
		}
		w.dirs[int32(wd)] = p
		return nil
	})
}

// The protocol's FileChangeType.
const (
	changeCreated = 1
	changeChanged = 2
	changeDeleted = 3
)

// changes are the files that changed since the last call, by path.
func (w *fileWatch) changes() (map[string]int, error) {
	out := map[string]int{}
	var buf [16 << 10]byte
	for {
		n, err := unix.Read(w.fd, buf[:])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return out, nil
		case err != nil:
			return nil, fmt.Errorf("read the workspace's changes: %w", err)
		}
		if err := w.parse(buf[:n], out); err != nil {
			return nil, err
		}
	}
}

// parse reads the events in b into out.
func (w *fileWatch) parse(b []byte, out map[string]int) error {
	for len(b) >= unix.SizeofInotifyEvent {
		wd := int32(binary.NativeEndian.Uint32(b[0:]))
		mask := binary.NativeEndian.Uint32(b[4:])
		size := int(binary.NativeEndian.Uint32(b[12:]))
		name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:unix.SizeofInotifyEvent+size]), "\x00")
		b = b[unix.SizeofInotifyEvent+size:]
		if mask&unix.IN_Q_OVERFLOW != 0 {
			return errOverflow
		}
		dir, ok := w.dirs[wd]
		if mask&unix.IN_IGNORED != 0 {
			delete(w.dirs, wd)
		}
		if !ok || name == "" {
			continue
		}
		w.record(filepath.Join(dir, name), mask, out)
	}
	return nil
}

// record notes one event about path.
func (w *fileWatch) record(path string, mask uint32, out map[string]int) {
	isDir := mask&unix.IN_ISDIR != 0
	switch {
	case mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
		out[path] = changeDeleted
	case isDir && mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		if !unwatched[filepath.Base(path)] {
			_ = w.addTree(path, out) // a watch that fails leaves that tree unseen, as at the start
		}
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		out[path] = changeCreated
	case mask&unix.IN_CLOSE_WRITE != 0:
		if out[path] != changeCreated {
			out[path] = changeChanged
		}
	}
}

func (w *fileWatch) close() { _ = unix.Close(w.fd) }
