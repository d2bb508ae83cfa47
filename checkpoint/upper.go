//go:build linux

package checkpoint

import (
	"fmt"
	"io/fs"
	"path"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/custos-dev/custos/sandbox/pathguard"
)

// opaqueXattr marks an overlay upper directory that replaces the lower
// one (userxattr mode, as the sandbox mounts its overlays).
const opaqueXattr = "user.overlay.opaque"

// FromUpper records what applying the overlay upper layer upper to the
// workspace will change, before it is applied: what overlayfs means by
// each entry (a whiteout removes, an opaque directory replaces, another
// directory merges, anything else replaces), the workspace's side read
// before and the upper side as the merge will move it. Fifos and sockets,
// which the merge does not apply, are left out; set-id bits, which it
// clears, are recorded cleared.
func (r *Recording) FromUpper(upper string) error {
	up, err := pathguard.OpenRoot(upper)
	if err != nil {
		return fmt.Errorf("checkpoint: open the upper layer: %w", err)
	}
	defer up.Close()
	r.startStage()
	return r.upperDir(up, ".", true)
}

// upperDir records the entries of the upper directory rel; wsDir says
// whether the workspace has a directory there (its entries are the lower
// side) rather than nothing.
func (r *Recording) upperDir(up *pathguard.Root, rel string, wsDir bool) error {
	d, err := up.Open(rel)
	if err != nil {
		return fmt.Errorf("checkpoint: upper layer %s: %w", rel, err)
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("checkpoint: upper layer %s: %w", rel, err)
	}
	var files []string // regular files and links, read ahead
	for _, e := range ents {
		if t := e.Type(); (t.IsRegular() || t == fs.ModeSymlink) && !InGit(path.Join(rel, e.Name())) {
			files = append(files, e.Name())
		}
	}
	ahead := r.prefetch(up, rel, files, wsDir)
	for _, e := range ents {
		p := path.Join(rel, e.Name())
		if InGit(p) {
			continue
		}
		if err := r.upperEntry(up, p, wsDir, ahead); err != nil {
			return err
		}
	}
	return nil
}

// upperEntry records the upper entry p, its sides from ahead when read
// there.
func (r *Recording) upperEntry(up *pathguard.Root, p string, wsDir bool, ahead map[string]captured) error {
	if c, ok := ahead[p]; ok && c.err == nil && c.before.Kind != Dir {
		ch := r.change(p)
		if ch.Before.Kind == "" {
			ch.Before = c.before
		}
		ch.After = c.after
		ch.After.Mode &^= uint32(fs.ModeSetuid | fs.ModeSetgid)
		return nil
	}
	fi, err := up.Lstat(p)
	if err != nil {
		return fmt.Errorf("checkpoint: upper layer %s: %w", p, err)
	}
	before := func() error {
		if !wsDir {
			r.change(p).Before = Entry{Kind: Absent}
			return nil
		}
		return r.BeforeTree(p)
	}
	switch t := fi.Mode().Type(); {
	case t == fs.ModeDevice|fs.ModeCharDevice && rdev(fi) == 0: // a whiteout
		return before()
	case t&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice) != 0:
		return nil // not applied
	case t == fs.ModeDir:
		return r.upperSubdir(up, p, fi, wsDir, before)
	}
	if err := before(); err != nil {
		return err
	}
	if err := r.AfterFrom(up, p, p); err != nil {
		return err
	}
	c := r.change(p)
	c.After.Mode &^= uint32(fs.ModeSetuid | fs.ModeSetgid)
	return nil
}

// upperSubdir records the upper directory p: merged into the workspace's
// directory, or replacing what the workspace has (opaque, or no
// directory there).
func (r *Recording) upperSubdir(up *pathguard.Root, p string, fi fs.FileInfo, wsDir bool, before func() error) error {
	wsHas := Entry{Kind: Absent}
	if wsDir {
		var err error
		if wsHas, err = r.s.capture(r.ws, p, nil); err != nil {
			return err
		}
	}
	if wsHas.Kind == Dir && !opaque(up, p) {
		r.change(p).Before = wsHas
		r.After(p, Entry{Kind: Dir, Mode: uint32(fi.Mode().Perm())})
		return r.upperDir(up, p, true)
	}
	if err := before(); err != nil {
		return err
	}
	r.After(p, Entry{Kind: Dir, Mode: uint32(fi.Mode().Perm())})
	return r.upperDir(up, p, false)
}

// opaque says whether the upper directory p is marked opaque ("y" only,
// as overlayfs reads it).
func opaque(up *pathguard.Root, p string) bool {
	f, err := up.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 4)
	n, err := unix.Fgetxattr(int(f.Fd()), opaqueXattr, buf)
	return err == nil && n == 1 && buf[0] == 'y'
}

// rdev is a device node's number (0 for overlayfs' whiteouts).
func rdev(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Rdev)
	}
	return ^uint64(0)
}
