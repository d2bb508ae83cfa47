package sysview

import (
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/custos-dev/custos/sandbox/mount"
)

// The system's mounts of a run (systemMountsFor) are a function of the
// host's root directory (which of /usr, /bin, … exist and how), of /etc's
// allowed entries and of the trees of its allowed directories: finding
// them anew stats each, some hundred calls, a quarter to half a
// millisecond of every Bash call's start. So the last result is kept with
// an inotify watch on each directory it was read from (/, /etc, and every
// directory of every copied tree): any entry added, removed, renamed,
// written, chmod'ed or chown'ed there queues an event, and a run that
// finds one pending (or the queue overflowed, or a watch gone) finds the
// mounts anew. What the watches cannot see is checked at every run: each
// allowed /etc entry that is a symbolic link is stat'ed through it (its
// target lives elsewhere), and the view's directory must still be the one
// it was.
// A result is kept only when it binds no directory of the host's /etc
// (such a directory's private entries are masked, and a watch of its top
// would not keep those current), and only when a second look, taken once
// the watches are in place, finds the same: a change between the first
// look and the watches shows there.

// sysWatch is the process's kept system mounts.
var sysWatch = sysMountWatch{look: lookSystem}

type sysMountWatch struct {
	// look finds the mounts anew, and what they were read from.
	look func(base string) (sysLook, error)

	mu   sync.Mutex
	w    dirWatch // nil: nothing kept
	base string
	kept sysLook
	// view is the view directory's own stat when kept: the same
	// directory, not one made at its path since.
	view os.FileInfo
}

// sysLook is one look at the system: the folded mounts (the view at dir),
// the directories they were read from, and the /etc entries reached
// through a symbolic link with their stat through it (nil: it leads
// nowhere).
type sysLook struct {
	folded []mount.Mount
	dir    string
	watch  []string
	links  map[string]os.FileInfo
}

// dirWatch is a set of directory watches: changed reports whether
// anything happened in a watched directory since the watches were added,
// or the watch can no longer tell.
type dirWatch interface {
	add(dir string) error
	changed() bool
	close()
}

// lookSystem is sysMountWatch.look for the host's system.
func lookSystem(base string) (sysLook, error) {
	ms, infos := probeSystemInfo(RootEntries, EtcPaths())
	folded, dir, err := etcViews.fold(base, ms, infos)
	if err != nil {
		return sysLook{}, err
	}
	l := sysLook{folded: folded, dir: dir, watch: append([]string{"/", "/etc"}, etcViews.trees.dirs()...), links: map[string]os.FileInfo{}}
	for _, p := range EtcPaths() {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			l.links[p] = infos[p]
		}
	}
	return l, nil
}

// current is the kept folded mounts and the view's directory, when
// nothing they were made of changed and base is the views' directory
// they were made for.
func (s *sysMountWatch) current(base string) (folded []mount.Mount, dir string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return nil, "", false
	}
	if s.base != base || s.w.changed() || !linksUnchanged(s.kept.links) {
		s.dropLocked()
		return nil, "", false
	}
	if fi, err := os.Lstat(s.kept.dir); err != nil || !os.SameFile(fi, s.view) {
		s.dropLocked()
		return nil, "", false
	}
	return s.kept.folded, s.kept.dir, true
}

// lookAndKeep looks at the system anew, and keeps what it found once it
// has a watch on every directory that was read from and a second look
// finds the same. Without inotify, or when anything fails, nothing is
// kept and the next run looks again.
func (s *sysMountWatch) lookAndKeep(base string) (sysLook, error) {
	first, err := s.look(base)
	if err != nil {
		return first, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked()
	if boundFromHost(first.folded) {
		return first, nil
	}
	w := newDirWatch()
	if w == nil {
		return first, nil
	}
	for _, d := range first.watch {
		if err := w.add(d); err != nil {
			w.close()
			return first, nil
		}
	}
	second, err := s.look(base)
	view, verr := os.Lstat(second.dir)
	if err != nil || verr != nil || !view.IsDir() || second.dir != first.dir || !slices.Equal(second.folded, first.folded) ||
		!subset(second.watch, first.watch) || !sameLinks(second.links, first.links) || w.changed() {
		w.close()
		if err != nil {
			return first, nil
		}
		return second, nil
	}
	s.w, s.base, s.kept, s.view = w, base, second, view
	return second, nil
}

func (s *sysMountWatch) dropLocked() {
	if s.w != nil {
		s.w.close()
	}
	s.w, s.kept, s.view = nil, sysLook{}, nil
}

// boundFromHost reports whether folded binds a directory of the host's
// /etc (one the view could not copy) rather than the view alone.
func boundFromHost(folded []mount.Mount) bool {
	return slices.ContainsFunc(folded, func(m mount.Mount) bool { return strings.HasPrefix(m.Dst, "/etc/") })
}

// linksUnchanged reports whether each path still leads to the file it led
// to (stat through the links) and that file is unchanged, or still leads
// nowhere (nil).
func linksUnchanged(links map[string]os.FileInfo) bool {
	for p, fi := range links {
		now, err := os.Stat(p)
		if fi == nil {
			if err == nil {
				return false
			}
			continue
		}
		if err != nil || !sameFile(fi, now) {
			return false
		}
	}
	return true
}

// sameLinks reports whether two looks found the same links leading to
// the same unchanged files.
func sameLinks(a, b map[string]os.FileInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for p, fa := range a {
		fb, ok := b[p]
		if !ok || (fa == nil) != (fb == nil) || (fa != nil && !sameFile(fa, fb)) {
			return false
		}
	}
	return true
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
