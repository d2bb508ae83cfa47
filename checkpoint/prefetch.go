//go:build linux

package checkpoint

import (
	"path"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/custos-dev/custos/sandbox/pathguard"
)

// captureWorkers is how many of a directory's files the recording of an
// upper layer reads at once: the work is system calls (open, read, link)
// that overlap, and a command that changed a thousand files waits for it.
const captureWorkers = 4

// captured is both sides of an upper layer's regular file or link, read
// ahead of the walk that records them in order.
type captured struct {
	before, after Entry
	err           error
}

// prefetch reads both sides of the upper directory rel's files and links
// (names) by their directories' descriptors, several at once when there
// are many; the walk then takes them from the map, in order, so the
// record is the same as a walk alone would make.
func (r *Recording) prefetch(up *pathguard.Root, rel string, names []string, wsDir bool) map[string]captured {
	out := make(map[string]captured, len(names))
	if len(names) == 0 {
		return out
	}
	ud, err := up.Open(rel)
	if err != nil {
		return out // the walk reads them one by one, and says why
	}
	defer ud.Close()
	wsfd := -1
	if wsDir {
		wd, err := r.ws.Open(rel)
		if err != nil {
			return out
		}
		defer wd.Close()
		wsfd = int(wd.Fd())
	}
	upfd := int(ud.Fd())
	workers := min(captureWorkers, (len(names)+7)/8)
	var mu sync.Mutex
	jobs := make(chan string)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var fresh []stored
			for name := range jobs {
				c := r.captureBoth(upfd, wsfd, name, &fresh)
				mu.Lock()
				out[path.Join(rel, name)] = c
				mu.Unlock()
			}
			mu.Lock()
			r.fresh = append(r.fresh, fresh...)
			mu.Unlock()
		}()
	}
	for _, name := range names {
		jobs <- name
	}
	close(jobs)
	wg.Wait()
	return out
}

// captureBoth reads the workspace's (wsfd, -1: none) and the upper
// layer's name.
func (r *Recording) captureBoth(upfd, wsfd int, name string, fresh *[]stored) captured {
	capture := r.s.captureAt
	if r.stageFd >= 0 {
		capture = r.stageAt
	}
	c := captured{before: Entry{Kind: Absent}}
	if wsfd >= 0 {
		if c.before, c.err = capture(wsfd, name, fresh); c.err != nil {
			return c
		}
	}
	c.after, c.err = capture(upfd, name, fresh)
	if c.err != nil {
		c.after, c.err = unreadable(upfd, name, c.err)
	}
	return c
}

// unreadable is the Entry of an upper file the recording cannot read (a
// command made it unreadable): its kind, mode and size, no content, so a
// rewind puts back what was before it but, not knowing what the job left,
// takes any content there now for someone else's (--force). An entry that
// cannot even be looked at is the error err.
func unreadable(dirfd int, name string, err error) (Entry, error) {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return Entry{}, err
	}
	return Entry{Kind: File, Mode: unixMode(st.Mode), Size: st.Size}, nil
}
