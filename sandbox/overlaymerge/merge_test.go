//go:build linux

package overlaymerge

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The merge's tests build upper layers by hand as overlayfs makes them
// (whiteouts, opaque directories, overlay xattrs), run one table through
// every way entries can land (rename, the copy fallback forced, and a real
// cross-device upper when /dev/shm is another file system), kill merges
// at every step and finish them, and check the result against a real
// overlay's (TestMergeUpperRealOverlay).

// mtMode is how a test's merge moves entries.
type mtMode int

const (
	mtRename     mtMode = iota // same file system: renames
	mtRenameProc               // same, xattrs by /proc paths (kernels before 6.13)
	mtCopy                     // renames forced to fail with EXDEV
	mtXdev                     // upper on another file system
	mtXdevTry                  // same, trying renames of whole directories anyway
)

func (m mtMode) String() string {
	return [...]string{"rename", "rename-proc", "copy", "xdev", "xdev-try"}[m]
}

func (m mtMode) merger() *merger {
	return &merger{forceCopy: m == mtCopy, skipMountCheck: m == mtXdevTry, noAt: m == mtRenameProc}
}

// renames reports whether m moves entries by renaming them.
func (m mtMode) renames() bool { return m == mtRename || m == mtRenameProc }

// mtEnv is one test's trees: the workspace, the upper layer, and a
// directory outside the workspace that workspace symlinks point to, which
// no merge may change.
type mtEnv struct {
	t           testing.TB
	ws, up, out string
	mode        mtMode
}

func (e *mtEnv) W(rel string) string { return filepath.Join(e.ws, rel) }
func (e *mtEnv) U(rel string) string { return filepath.Join(e.up, rel) }

func newMtEnv(t testing.TB, mode mtMode) *mtEnv {
	base := t.TempDir()
	e := &mtEnv{t: t, ws: filepath.Join(base, "ws"), up: filepath.Join(base, "up"), out: filepath.Join(base, "out"), mode: mode}
	if mode == mtXdev || mode == mtXdevTry {
		e.up = mtOtherFS(t, base)
	}
	for _, d := range []string{e.ws, e.up, e.out} {
		mtDir(t, d, 0o755)
	}
	mtNeedXattrs(t, e.ws)
	mtNeedXattrs(t, e.up)
	mtFile(t, filepath.Join(e.out, "target"), "outside", 0o644)
	mtFile(t, filepath.Join(e.out, "dir", "victim"), "victim", 0o644)
	// Before t.TempDir's removal: directories a test made unreadable.
	t.Cleanup(func() { mtOpenUp(base) })
	return e
}

// mtOtherFS is a new directory on a file system other than base's
// (/dev/shm), with user xattrs, or skips: the forced copy covers the same
// code on any machine.
func mtOtherFS(t testing.TB, base string) string {
	var a, b unix.Stat_t
	if unix.Stat(base, &a) != nil || unix.Stat("/dev/shm", &b) != nil || a.Dev == b.Dev {
		t.Skip("no second local file system (/dev/shm) for a real cross-device merge")
	}
	d, err := os.MkdirTemp("/dev/shm", "custos-merge-test-")
	if err != nil {
		t.Skipf("no second local file system: %v", err)
	}
	t.Cleanup(func() { mtOpenUp(d); _ = os.RemoveAll(d) })
	if unix.Setxattr(d, "user.probe", []byte("1"), 0) != nil {
		t.Skip("/dev/shm has no user xattrs")
	}
	_ = unix.Removexattr(d, "user.probe")
	return d
}

// mtOpenUp gives every directory under root u+rwx, so it can be removed.
func mtOpenUp(root string) {
	_ = os.Chmod(root, 0o755)
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
}

func mtNeedXattrs(t testing.TB, dir string) {
	p := filepath.Join(dir, ".xattr-probe")
	mtFile(t, p, "", 0o644)
	defer os.Remove(p)
	if err := unix.Setxattr(p, "user.probe", []byte("1"), 0); err != nil {
		t.Fatalf("the file system of %s does not support user xattrs (%v): the overlay merge's tests need them, as overlayfs' userxattr mode does", dir, err)
	}
}

func mtFile(t testing.TB, p, data string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
}

func mtDir(t testing.TB, p string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
}

// mtSetMode sets a mode with its set-id bits (os.Chmod takes those as
// os.ModeSetuid and the like, not as octal).
func mtSetMode(t testing.TB, p string, mode uint32) {
	t.Helper()
	if err := unix.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func mtChmod(t testing.TB, p string, perm os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
}

func mtLink(t testing.TB, target, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// mtWhiteout makes an overlayfs whiteout, which Linux ≥ 5.8 lets any
// user make.
func mtWhiteout(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(p, unix.S_IFCHR, 0); err != nil {
		t.Fatalf("make whiteout %s: %v (unprivileged whiteouts need Linux 5.8 or later)", p, err)
	}
}

func mtXattr(t testing.TB, p, name, val string) {
	t.Helper()
	if err := unix.Lsetxattr(p, name, []byte(val), 0); err != nil {
		t.Fatalf("set %s on %s: %v", name, p, err)
	}
}

func mtOpaque(t testing.TB, p string) { mtXattr(t, p, "user.overlay.opaque", "y") }

// mtTimes sets p's (not followed) atime and mtime to sec and a fixed
// nanosecond part, which checks keep nanoseconds too.
func mtTimes(t testing.TB, p string, sec int64) {
	t.Helper()
	ts := []unix.Timespec{{Sec: sec, Nsec: 123456789}, {Sec: sec, Nsec: 123456789}}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}
}

func mtFifo(t testing.TB, p string, perm uint32) {
	t.Helper()
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, os.FileMode(perm)); err != nil {
		t.Fatal(err)
	}
}

// mtSocket leaves a bound socket's file at p, as a dead server does.
func mtSocket(t testing.TB, p string) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: p}); err != nil {
		t.Fatal(err)
	}
}

// mtAccess runs fn on p, and if it was refused, again with u+rwx added for
// the moment to p and to those of its directories this user owns that
// lack them: a non-root test reading what a case made unreadable. Only
// ctimes change.
func mtAccess(p string, fn func() error) error {
	err := fn()
	if !errors.Is(err, fs.ErrPermission) && err != unix.EACCES {
		return err
	}
	var chain []string
	for a := p; ; a = filepath.Dir(a) {
		chain = append(chain, a)
		if a == filepath.Dir(a) {
			break
		}
	}
	type undo struct {
		p    string
		mode uint32
	}
	var undos []undo
	defer func() {
		for _, u := range undos {
			_ = unix.Fchmodat(unix.AT_FDCWD, u.p, u.mode, 0)
		}
	}()
	for i := len(chain) - 1; i >= 0; i-- {
		var st unix.Stat_t
		if unix.Lstat(chain[i], &st) != nil || st.Uid != uint32(os.Getuid()) || st.Mode&unix.S_IFMT == unix.S_IFLNK || st.Mode&0o700 == 0o700 {
			continue
		}
		if unix.Fchmodat(unix.AT_FDCWD, chain[i], st.Mode&0o7777|0o700, 0) == nil {
			undos = append([]undo{{chain[i], st.Mode & 0o7777}}, undos...)
		}
	}
	return fn()
}

func mtReadFile(t testing.TB, p string) string {
	t.Helper()
	var b []byte
	err := mtAccess(p, func() (err error) { b, err = os.ReadFile(p); return err })
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mtNames(t testing.TB, dir string) []string {
	t.Helper()
	var names []string
	err := mtAccess(dir, func() error {
		ents, err := os.ReadDir(dir)
		names = names[:0]
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func mtLstat(t testing.TB, p string) *unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := mtAccess(filepath.Dir(p), func() error { return unix.Lstat(p, &st) }); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return &st
}

func mtWantType(t testing.TB, p string, typ uint32, perm uint32) *unix.Stat_t {
	t.Helper()
	st := mtLstat(t, p)
	if st.Mode&unix.S_IFMT != typ {
		t.Fatalf("%s: type %#o, want %#o", p, st.Mode&unix.S_IFMT, typ)
	}
	if typ != unix.S_IFLNK && st.Mode&0o7777 != perm {
		t.Errorf("%s: mode %#o, want %#o", p, st.Mode&0o7777, perm)
	}
	return st
}

func mtWantFile(t testing.TB, p, data string, perm uint32) {
	t.Helper()
	mtWantType(t, p, unix.S_IFREG, perm)
	if got := mtReadFile(t, p); got != data {
		t.Errorf("%s: content %q, want %q", p, got, data)
	}
}

func mtWantDir(t testing.TB, p string, perm uint32, names ...string) {
	t.Helper()
	mtWantType(t, p, unix.S_IFDIR, perm)
	got := mtNames(t, p)
	sort.Strings(names)
	if strings.Join(got, "\x00") != strings.Join(names, "\x00") {
		t.Errorf("%s holds %q, want %q", p, got, names)
	}
}

func mtWantLink(t testing.TB, p, target string) {
	t.Helper()
	mtWantType(t, p, unix.S_IFLNK, 0)
	var got string
	err := mtAccess(filepath.Dir(p), func() (err error) { got, err = os.Readlink(p); return err })
	if err != nil || got != target {
		t.Errorf("%s: link to %q (%v), want %q", p, got, err, target)
	}
}

func mtWantAbsent(t testing.TB, p string) {
	t.Helper()
	if err := mtAccess(filepath.Dir(p), func() error { _, err := os.Lstat(p); return err }); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: still there (%v)", p, err)
	}
}

func mtWantMtime(t testing.TB, p string, sec int64) {
	t.Helper()
	if st := mtLstat(t, p); st.Mtim.Sec != sec || st.Mtim.Nsec != 123456789 {
		t.Errorf("%s: mtime %d.%09d, want %d.123456789", p, st.Mtim.Sec, st.Mtim.Nsec, sec)
	}
}

func mtWantXattr(t testing.TB, p, name, want string) {
	t.Helper()
	b := make([]byte, 256)
	var n int
	err := mtAccess(p, func() (err error) { n, err = unix.Lgetxattr(p, name, b); return err })
	switch {
	case want == "" && err != unix.ENODATA:
		t.Errorf("%s: xattr %s = %q (%v), want none", p, name, b[:max(n, 0)], err)
	case want != "" && (err != nil || string(b[:n]) != want):
		t.Errorf("%s: xattr %s = %q (%v), want %q", p, name, b[:max(n, 0)], err, want)
	}
}

// mtNode is what a tree comparison looks at for one entry.
type mtNode struct {
	Type, Mode, Nlink uint32
	Mtime             unix.Timespec
	Data              string // content, or link target
	Xattrs            string // user.* names and values, sorted
}

func (n mtNode) String() string {
	return fmt.Sprintf("type %#o mode %#o nlink %d mtime %d.%09d data %q xattrs %q",
		n.Type, n.Mode, n.Nlink, n.Mtime.Sec, n.Mtime.Nsec, n.Data, n.Xattrs)
}

// mtSnap describes every entry under root (not root itself) by its path.
func mtSnap(t testing.TB, root string) map[string]mtNode {
	t.Helper()
	out := map[string]mtNode{}
	var walk func(rel string)
	walk = func(rel string) {
		for _, name := range mtNames(t, filepath.Join(root, rel)) {
			r := filepath.Join(rel, name)
			p := filepath.Join(root, r)
			st := mtLstat(t, p)
			n := mtNode{Type: st.Mode & unix.S_IFMT, Mode: st.Mode & 0o7777, Mtime: st.Mtim, Xattrs: mtUserXattrs(t, p)}
			switch n.Type {
			case unix.S_IFDIR:
				walk(r)
			case unix.S_IFREG:
				n.Data, n.Nlink = mtReadFile(t, p), uint32(st.Nlink)
			case unix.S_IFLNK:
				_ = mtAccess(root, func() (err error) { n.Data, err = os.Readlink(p); return err })
			case unix.S_IFCHR, unix.S_IFBLK:
				n.Data = strconv.FormatUint(st.Rdev, 10)
			}
			out[r] = n
		}
	}
	walk("")
	return out
}

func mtUserXattrs(t testing.TB, p string) string {
	var list []byte
	err := mtAccess(p, func() error {
		b := make([]byte, 4096)
		n, err := unix.Llistxattr(p, b)
		list = b[:max(n, 0)]
		return err
	})
	if err != nil {
		t.Fatalf("list xattrs of %s: %v", p, err)
	}
	var kv []string
	for _, name := range strings.Split(string(list), "\x00") {
		if !strings.HasPrefix(name, "user.") {
			continue
		}
		v := make([]byte, 4096)
		var n int
		_ = mtAccess(p, func() (err error) { n, err = unix.Lgetxattr(p, name, v); return err })
		kv = append(kv, name+"="+string(v[:max(n, 0)]))
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// mtDiff lists how two snapshots differ; sameTime(path, a, b) decides
// whether times count for an entry (nil: always).
func mtDiff(a, b map[string]mtNode, sameTime func(string, mtNode, mtNode) bool) []string {
	var out []string
	for p, x := range a {
		y, ok := b[p]
		if !ok {
			out = append(out, fmt.Sprintf("%s: only in the first (%v)", p, x))
			continue
		}
		if sameTime == nil || sameTime(p, x, y) {
			if x != y {
				out = append(out, fmt.Sprintf("%s:\n\t%v\n\t%v", p, x, y))
			}
			continue
		}
		x.Mtime, y.Mtime = unix.Timespec{}, unix.Timespec{}
		if x != y {
			out = append(out, fmt.Sprintf("%s:\n\t%v\n\t%v", p, x, y))
		}
	}
	for p, y := range b {
		if _, ok := a[p]; !ok {
			out = append(out, fmt.Sprintf("%s: only in the second (%v)", p, y))
		}
	}
	sort.Strings(out)
	return out
}

// mtCheckClean checks what every merge must leave: an empty upper root,
// no overlay xattr, whiteout or leftover copy in the workspace, and the
// outside directory as it was (before).
func mtCheckClean(t testing.TB, e *mtEnv, before map[string]mtNode, upperLeft bool) {
	t.Helper()
	if names := mtNames(t, e.up); len(names) > 0 && !upperLeft {
		t.Errorf("upper layer not emptied: %q", names)
	}
	for p, n := range mtSnap(t, e.ws) {
		if strings.Contains(n.Xattrs, "user.overlay.") {
			t.Errorf("%s: overlay xattrs left in the workspace: %s", p, n.Xattrs)
		}
		// (The "odd names" case has an upper entry named like a copy.)
		if b := filepath.Base(p); n.Type == unix.S_IFCHR || strings.HasPrefix(b, mergeTmpPrefix) && b != mergeTmpPrefix+"x" {
			t.Errorf("%s: left in the workspace (%v)", p, n)
		}
	}
	if d := mtDiff(before, mtSnap(t, e.out), nil); len(d) > 0 {
		t.Errorf("the merge changed what is outside the workspace:\n%s", strings.Join(d, "\n"))
	}
}

// mergeCase is one row of the merge's table: trees to build, and what
// the workspace must then hold.
type mergeCase struct {
	name  string
	setup func(e *mtEnv)
	check func(t *testing.T, e *mtEnv, st Stats)
	// wantErr, when set, is in the merge's error, and the upper layer may
	// keep what failed.
	wantErr func(e *mtEnv) string
	// roots: the case changes the roots themselves, so the resume test,
	// which puts every case in a subdirectory, leaves it out.
	roots bool
}

func mergeCases() []mergeCase {
	var cs []mergeCase
	for _, f := range []func() []mergeCase{mtCasesFiles, mtCasesSpecial, mtCasesDirs, mtCasesMerged, mtCasesLinks, mtCasesModes, mtCasesOdd} {
		cs = append(cs, f()...)
	}
	return cs
}

func mtCasesFiles() []mergeCase {
	return []mergeCase{{
		name: "new file keeps mode and times",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.U("f"), "hello", 0o640)
			mtTimes(e.t, e.U("f"), 1_000_000_000)
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantFile(t, e.W("f"), "hello", 0o640)
			mtWantMtime(t, e.W("f"), 1_000_000_000)
		},
	}, {
		name: "changed file loses overlay xattrs, keeps others",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.W("f"), "old", 0o644)
			mtXattr(e.t, e.W("f"), "user.keep", "1")
			mtFile(e.t, e.U("f"), "new", 0o600)
			mtXattr(e.t, e.U("f"), "user.keep", "1")
			mtXattr(e.t, e.U("f"), "user.overlay.origin", "")
			mtXattr(e.t, e.U("f"), "user.overlay.nlink", "x")
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantFile(t, e.W("f"), "new", 0o600)
			mtWantXattr(t, e.W("f"), "user.keep", "1")
			mtWantXattr(t, e.W("f"), "user.overlay.origin", "")
		},
	}, {
		name: "whiteouts delete files",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.W("gone"), "x", 0o644)
			mtFile(e.t, e.W("kept"), "x", 0o644)
			mtWhiteout(e.t, e.U("gone"))
			mtWhiteout(e.t, e.U("never-there"))
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantAbsent(t, e.W("gone"))
			mtWantAbsent(t, e.W("never-there"))
			mtWantFile(t, e.W("kept"), "x", 0o644)
		},
	}, {
		name: "file replaces dir",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.W("d/a"), "a", 0o644)
			mtFile(e.t, e.W("d/sub/b"), "b", 0o644)
			mtFile(e.t, e.U("d"), "now a file", 0o644)
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) { mtWantFile(t, e.W("d"), "now a file", 0o644) },
	}}
}

func mtCasesSpecial() []mergeCase {
	return []mergeCase{{
		name: "fifos and sockets are not applied",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.W("p"), "was a file", 0o644)
			mtFifo(e.t, e.U("p"), 0o620)
			mtDir(e.t, e.U("newdir"), 0o755)
			mtFifo(e.t, e.U("newdir/fifo"), 0o600)
			mtSocket(e.t, e.U("sock"))
		},
		check: func(t *testing.T, e *mtEnv, st Stats) {
			mtWantFile(t, e.W("p"), "was a file", 0o644)
			mtWantAbsent(t, e.W("sock"))
			mtWantDir(t, e.W("newdir"), 0o755)
			sort.Strings(st.Special)
			if want := []string{"newdir/fifo", "p", "sock"}; !reflect.DeepEqual(st.Special, want) {
				t.Errorf("stats name %q as not applied, want %q", st.Special, want)
			}
		},
	}, {
		name: "set-uid and set-gid bits are cleared, set-gid kept where the kernel gives it",
		setup: func(e *mtEnv) {
			for _, f := range []struct {
				p    string
				mode uint32
			}{{"suid", 0o4755}, {"sgid", 0o2711}, {"new/both", 0o6755}} {
				mtFile(e.t, e.U(f.p), "x", 0o644)
				mtSetMode(e.t, e.U(f.p), f.mode)
			}
			mtDir(e.t, e.W("shared"), 0o755)
			mtSetMode(e.t, e.W("shared"), 0o2775)
			mtDir(e.t, e.U("shared/inherits"), 0o755)
			mtSetMode(e.t, e.U("shared/inherits"), 0o2775)
			mtSetMode(e.t, e.U("shared"), 0o2775)
			mtDir(e.t, e.U("plain"), 0o755)
			mtSetMode(e.t, e.U("plain"), 0o2755)
			mtDir(e.t, e.U("new/sub"), 0o755)
			mtSetMode(e.t, e.U("new/sub"), 0o2755)
		},
		check: func(t *testing.T, e *mtEnv, st Stats) {
			mtWantFile(t, e.W("suid"), "x", 0o755)
			mtWantFile(t, e.W("sgid"), "x", 0o711)
			mtWantFile(t, e.W("new/both"), "x", 0o755)
			mtWantType(t, e.W("shared"), unix.S_IFDIR, 0o2775)
			mtWantType(t, e.W("shared/inherits"), unix.S_IFDIR, 0o2775)
			mtWantType(t, e.W("plain"), unix.S_IFDIR, 0o755)
			mtWantType(t, e.W("new/sub"), unix.S_IFDIR, 0o755)
			sort.Strings(st.SetID)
			if want := []string{"new/both", "new/sub", "plain", "sgid", "suid"}; !reflect.DeepEqual(st.SetID, want) {
				t.Errorf("stats name %q as cleared, want %q", st.SetID, want)
			}
		},
	}, {
		name: "hard links survive a rename",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.U("h1"), "linked", 0o644)
			if err := os.Link(e.U("h1"), e.U("h2")); err != nil {
				e.t.Fatal(err)
			}
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantFile(t, e.W("h1"), "linked", 0o644)
			mtWantFile(t, e.W("h2"), "linked", 0o644)
			a, b := mtLstat(t, e.W("h1")), mtLstat(t, e.W("h2"))
			if e.mode.renames() && a.Ino != b.Ino {
				t.Error("a rename broke the hard link")
			}
		},
	}, {
		name: "odd names",
		setup: func(e *mtEnv) {
			for _, n := range []string{"sp ace", "new\nline", "-dash", "..dots", mergeTmpPrefix + "x"} {
				mtFile(e.t, e.U(n), n, 0o644)
			}
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			for _, n := range []string{"sp ace", "new\nline", "-dash", "..dots"} {
				mtWantFile(t, e.W(n), n, 0o644)
			}
		},
	}}
}

func mtCasesDirs() []mergeCase {
	return []mergeCase{{
		name: "new nested dirs keep modes and times",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.U("a/b/c/f"), "deep", 0o644)
			mtDir(e.t, e.U("a/b/c"), 0o755)
			mtDir(e.t, e.U("a/b"), 0o700)
			mtDir(e.t, e.U("a"), 0o751)
			for i, d := range []string{"a/b/c", "a/b", "a"} {
				mtTimes(e.t, e.U(d), int64(1_100_000_000+i))
			}
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantFile(t, e.W("a/b/c/f"), "deep", 0o644)
			mtWantDir(t, e.W("a"), 0o751, "b")
			mtWantDir(t, e.W("a/b"), 0o700, "c")
			for i, d := range []string{"a/b/c", "a/b", "a"} {
				mtWantMtime(t, e.W(d), int64(1_100_000_000+i))
			}
		},
	}, {
		name: "whiteout deletes a whole dir",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.W("d/x/y/z"), "z", 0o644)
			mtFile(e.t, e.W("d/locked/f"), "f", 0o644)
			mtDir(e.t, e.W("d/locked"), 0)
			mtDir(e.t, e.W("d/ro"), 0o555)
			mtLink(e.t, e.out, e.W("d/lnk"))
			mtWhiteout(e.t, e.U("d"))
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) { mtWantAbsent(t, e.W("d")) },
	}, {
		name: "opaque dir replaces the workspace's",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.W("d/old"), "old", 0o644)
			mtFile(e.t, e.W("d/sub/old2"), "old2", 0o644)
			mtFile(e.t, e.W("d/locked/f"), "f", 0o644)
			mtDir(e.t, e.W("d/locked"), 0)
			mtFile(e.t, e.U("d/new"), "new", 0o644)
			mtFile(e.t, e.U("d/sub/n2"), "n2", 0o644)
			mtDir(e.t, e.U("d"), 0o750)
			mtOpaque(e.t, e.U("d"))
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantDir(t, e.W("d"), 0o750, "new", "sub")
			mtWantDir(t, e.W("d/sub"), 0o755, "n2")
		},
	}, {
		name: "only opaque y replaces",
		setup: func(e *mtEnv) {
			for _, v := range []string{"x", "n"} {
				mtFile(e.t, e.W("d"+v+"/old"), "old", 0o644)
				mtFile(e.t, e.U("d"+v+"/new"), "new", 0o644)
				mtXattr(e.t, e.U("d"+v), "user.overlay.opaque", v)
			}
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantDir(t, e.W("dx"), 0o755, "new", "old")
			mtWantDir(t, e.W("dn"), 0o755, "new", "old")
		},
	}}
}

func mtCasesMerged() []mergeCase {
	return []mergeCase{{
		name: "dir replaces file",
		setup: func(e *mtEnv) {
			for _, n := range []string{"opaque", "plain"} {
				mtFile(e.t, e.W(n), "a file", 0o644)
				mtFile(e.t, e.U(n+"/in"), "in", 0o644)
			}
			mtOpaque(e.t, e.U("opaque"))
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantDir(t, e.W("opaque"), 0o755, "in")
			mtWantDir(t, e.W("plain"), 0o755, "in")
		},
	}, {
		name: "merged dir gets the upper mode, times and xattrs",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.W("d/old"), "old", 0o644)
			mtXattr(e.t, e.W("d"), "user.dropped", "1")
			mtXattr(e.t, e.W("d"), "user.keep", "1")
			mtFile(e.t, e.U("d/new"), "new", 0o644)
			mtDir(e.t, e.U("d"), 0o700)
			mtXattr(e.t, e.U("d"), "user.keep", "2")
			mtXattr(e.t, e.U("d"), "user.added", "3")
			mtXattr(e.t, e.U("d"), "user.overlay.origin", "")
			mtXattr(e.t, e.U("d"), "user.overlay.impure", "y")
			mtTimes(e.t, e.U("d"), 1_200_000_000)
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantDir(t, e.W("d"), 0o700, "new", "old")
			mtWantMtime(t, e.W("d"), 1_200_000_000)
			mtWantXattr(t, e.W("d"), "user.keep", "2")
			mtWantXattr(t, e.W("d"), "user.added", "3")
			mtWantXattr(t, e.W("d"), "user.dropped", "")
		},
	}, {
		name: "new dir with overlay leftovers inside",
		setup: func(e *mtEnv) {
			mtWhiteout(e.t, e.U("n/gone"))
			mtFile(e.t, e.U("n/f"), "f", 0o644)
			mtXattr(e.t, e.U("n/f"), "user.overlay.origin", "")
			mtFile(e.t, e.U("n/o/in"), "in", 0o644)
			mtOpaque(e.t, e.U("n/o"))
			mtWhiteout(e.t, e.U("n/o/gone2"))
			mtXattr(e.t, e.U("n"), "user.overlay.impure", "y")
			mtTimes(e.t, e.U("n/o"), 1_300_000_001)
			mtTimes(e.t, e.U("n"), 1_300_000_000)
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantDir(t, e.W("n"), 0o755, "f", "o")
			mtWantDir(t, e.W("n/o"), 0o755, "in")
			mtWantMtime(t, e.W("n"), 1_300_000_000)
			mtWantMtime(t, e.W("n/o"), 1_300_000_001)
		},
	}}
}

// mtCasesLinks are the security cases: workspace symlinks that point
// outside it (to e.out) are replaced or removed, never followed, and
// upper symlinks land as links. mtCheckClean checks e.out for each.
func mtCasesLinks() []mergeCase {
	return []mergeCase{{
		name: "dir replaces a workspace symlink, not followed",
		setup: func(e *mtEnv) {
			mtLink(e.t, filepath.Join(e.out, "dir"), e.W("evil"))
			mtFile(e.t, e.U("evil/passwd"), "pwned", 0o644)
			mtOpaque(e.t, e.U("evil"))
			// Not opaque, holding a whiteout of what the link's target holds:
			// following the link would delete outside/dir/victim.
			mtLink(e.t, "../out/dir", e.W("evil2"))
			mtWhiteout(e.t, e.U("evil2/victim"))
			mtFile(e.t, e.U("evil2/planted"), "pwned", 0o644)
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantDir(t, e.W("evil"), 0o755, "passwd")
			mtWantDir(t, e.W("evil2"), 0o755, "planted")
		},
	}, {
		name: "symlink deeper in a merged dir replaced, not followed",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.W("d/keep"), "k", 0o644)
			mtLink(e.t, filepath.Join(e.out, "dir"), e.W("d/lnk"))
			mtFile(e.t, e.U("d/lnk/x"), "x", 0o644)
			mtWhiteout(e.t, e.U("d/lnk/victim"))
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantDir(t, e.W("d"), 0o755, "keep", "lnk")
			mtWantDir(t, e.W("d/lnk"), 0o755, "x")
		},
	}, {
		name: "whiteout or file replaces a workspace symlink, not followed",
		setup: func(e *mtEnv) {
			mtLink(e.t, filepath.Join(e.out, "dir"), e.W("wh"))
			mtWhiteout(e.t, e.U("wh"))
			mtLink(e.t, filepath.Join(e.out, "dir"), e.W("file"))
			mtFile(e.t, e.U("file"), "mine", 0o600)
			mtLink(e.t, filepath.Join(e.out, "target"), e.W("tfile"))
			mtFile(e.t, e.U("tfile"), "mine", 0o600)
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantAbsent(t, e.W("wh"))
			mtWantFile(t, e.W("file"), "mine", 0o600)
			mtWantFile(t, e.W("tfile"), "mine", 0o600)
		},
	}, {
		name: "upper symlinks land as links",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.W("l1"), "was a file", 0o644)
			mtLink(e.t, filepath.Join(e.out, "target"), e.U("l1"))
			mtTimes(e.t, e.U("l1"), 1_400_000_000)
			mtFile(e.t, e.W("l2/in"), "was a dir", 0o644)
			mtLink(e.t, "../out", e.U("l2"))
			mtLink(e.t, "nowhere/at/all", e.U("l3"))
			mtFile(e.t, e.W("d/x"), "x", 0o644)
			mtLink(e.t, filepath.Join(e.out, "dir"), e.U("d/in"))
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantLink(t, e.W("l1"), filepath.Join(e.out, "target"))
			mtWantMtime(t, e.W("l1"), 1_400_000_000)
			mtWantLink(t, e.W("l2"), "../out")
			mtWantLink(t, e.W("l3"), "nowhere/at/all")
			mtWantLink(t, e.W("d/in"), filepath.Join(e.out, "dir"))
		},
	}}
}

func mtCasesModes() []mergeCase {
	return []mergeCase{{
		name: "mode-000 and read-only upper dirs",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.U("locked/f"), "f", 0o644)
			mtFile(e.t, e.U("locked/sub/g"), "g", 0o644)
			mtDir(e.t, e.U("locked/sub"), 0)
			mtDir(e.t, e.U("locked"), 0)
			mtFile(e.t, e.W("ro/old"), "old", 0o644)
			mtFile(e.t, e.U("ro/new"), "new", 0o644)
			mtDir(e.t, e.U("ro"), 0o555)
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantDir(t, e.W("locked"), 0, "f", "sub")
			mtWantDir(t, e.W("locked/sub"), 0, "g")
			mtWantDir(t, e.W("ro"), 0o555, "new", "old")
		},
	}, {
		name: "unreadable and read-only files with overlay xattrs",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.U("secret"), "s", 0o600)
			mtXattr(e.t, e.U("secret"), "user.overlay.origin", "")
			mtChmod(e.t, e.U("secret"), 0)
			mtFile(e.t, e.W("ro"), "old", 0o444)
			mtFile(e.t, e.U("ro"), "new", 0o644)
			mtXattr(e.t, e.U("ro"), "user.overlay.origin", "")
			mtXattr(e.t, e.U("ro"), "user.keep", "1")
			mtChmod(e.t, e.U("ro"), 0o444)
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantFile(t, e.W("secret"), "s", 0)
			mtWantFile(t, e.W("ro"), "new", 0o444)
			mtWantXattr(t, e.W("ro"), "user.keep", "1")
		},
	}, {
		name: "unreadable workspace dirs replaced",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.W("d/f"), "f", 0o644)
			mtDir(e.t, e.W("d"), 0)
			mtFile(e.t, e.U("d"), "file now", 0o644)
			mtFile(e.t, e.W("m/old"), "old", 0o644)
			mtDir(e.t, e.W("m"), 0o500)
			mtFile(e.t, e.U("m/new"), "new", 0o644)
			mtDir(e.t, e.U("m"), 0o700)
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantFile(t, e.W("d"), "file now", 0o644)
			mtWantDir(t, e.W("m"), 0o700, "new", "old")
		},
	}, {
		name:  "workspace root keeps its own mode",
		roots: true,
		setup: func(e *mtEnv) {
			mtDir(e.t, e.ws, 0o750)
			mtFile(e.t, e.U("f"), "f", 0o644)
			mtDir(e.t, e.up, 0o700)
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) { mtWantDir(t, e.ws, 0o750, "f") },
	}}
}

func mtCasesOdd() []mergeCase {
	return []mergeCase{{
		name: "stats",
		setup: func(e *mtEnv) {
			mtFile(e.t, e.U("a"), "a", 0o644)
			mtFile(e.t, e.U("b"), "b", 0o644)
			mtFile(e.t, e.W("c"), "c", 0o644)
			mtWhiteout(e.t, e.U("c"))
			mtFile(e.t, e.U("d/x"), "x", 0o644)
			mtFile(e.t, e.U("d/y"), "y", 0o644)
		},
		check: func(t *testing.T, e *mtEnv, st Stats) {
			want := Stats{Entries: 6, Renamed: 3, Removed: 1}
			if !e.mode.renames() {
				want = Stats{Entries: 6, Copied: 5, Removed: 1}
			}
			if !reflect.DeepEqual(st, want) {
				t.Errorf("stats %+v, want %+v", st, want)
			}
		},
	}, {
		name:  "empty upper",
		setup: func(e *mtEnv) { mtFile(e.t, e.W("f"), "f", 0o644) },
		check: func(t *testing.T, e *mtEnv, st Stats) {
			mtWantDir(t, e.ws, 0o755, "f")
			if !reflect.DeepEqual(st, Stats{}) {
				t.Errorf("stats %+v for an empty upper layer", st)
			}
		},
	}, {
		name:  "errors are reported with the path, the rest applied",
		roots: true,
		setup: mtFailingSetup,
		wantErr: func(e *mtEnv) string {
			if os.Geteuid() == 0 {
				return `sandbox: merge upper layer: "sub/dev": a device node`
			}
			return `sandbox: merge upper layer: "blocked": `
		},
		check: func(t *testing.T, e *mtEnv, _ Stats) {
			mtWantFile(t, e.W("sub/ok"), "ok", 0o644)
			if os.Geteuid() == 0 {
				mtWantFile(t, e.W("ok"), "ok", 0o644)
				mtWantDir(t, e.U("sub"), 0o755, "dev")
				mtWantAbsent(t, e.W("sub/dev"))
			} else {
				mtWantDir(t, e.up, 0o755, "blocked", "ok")
			}
		},
	}}
}

// mtFailingSetup makes one entry fail: a device node (root can make one),
// or a new file in a workspace root this user cannot write (which root
// could).
func mtFailingSetup(e *mtEnv) {
	mtFile(e.t, e.W("sub/old"), "old", 0o644)
	mtFile(e.t, e.U("sub/ok"), "ok", 0o644)
	mtFile(e.t, e.U("ok"), "ok", 0o644)
	if os.Geteuid() == 0 {
		if err := unix.Mknod(e.U("sub/dev"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	// "ok" then fails too.
	mtFile(e.t, e.U("blocked"), "b", 0o644)
	mtDir(e.t, e.ws, 0o555)
}

// TestMergeUpper runs the table through every way entries land.
func TestMergeUpper(t *testing.T) {
	for _, mode := range []mtMode{mtRename, mtRenameProc, mtCopy, mtXdev, mtXdevTry} {
		t.Run(mode.String(), func(t *testing.T) {
			for _, c := range mergeCases() {
				t.Run(c.name, func(t *testing.T) { mtRunCase(t, c, mode) })
			}
		})
	}
}

func mtRunCase(t *testing.T, c mergeCase, mode mtMode) {
	e := newMtEnv(t, mode)
	c.setup(e)
	out := mtSnap(t, e.out)
	st, err := mode.merger().run(e.up, e.ws)
	switch {
	case c.wantErr == nil && err != nil:
		t.Fatalf("merge: %v", err)
	case c.wantErr != nil && err == nil:
		t.Fatalf("merge succeeded, want an error with %q", c.wantErr(e))
	case c.wantErr != nil && !strings.Contains(err.Error(), c.wantErr(e)):
		t.Fatalf("merge: %v\nwant an error with %q", err, c.wantErr(e))
	}
	c.check(t, e, st)
	mtCheckClean(t, e, out, c.wantErr != nil)
	if t.Failed() {
		t.Logf("workspace after the merge:\n%s", mtDump(t, e.ws))
		t.Logf("upper after the merge:\n%s", mtDump(t, e.up))
	}
}

func mtDump(t testing.TB, root string) string {
	s := mtSnap(t, root)
	var lines []string
	for p, n := range s {
		lines = append(lines, fmt.Sprintf("%q %v", p, n))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestMergeUpperResume kills merges at every change they make (and some
// twice), runs Apply again on what is left, and checks the end state
// equals one uninterrupted merge's, times included.
func TestMergeUpperResume(t *testing.T) {
	for _, mode := range []mtMode{mtRename, mtCopy} {
		t.Run(mode.String(), func(t *testing.T) { mtResume(t, mode) })
	}
}

func mtResume(t *testing.T, mode mtMode) {
	base := mtFastDir(t)
	// Always the same place: absolute link targets must not differ.
	dir := filepath.Join(base, "run")
	ref := mtResumeFixture(t, dir, mode)
	counter := mode.merger()
	counter.stopAt = -1
	if _, err := counter.run(ref.up, ref.ws); err != nil {
		t.Fatal(err)
	}
	want, total := mtSnap(t, ref.ws), counter.ops
	if total < 100 {
		t.Fatalf("the fixture's merge made only %d changes", total)
	}
	for k := 1; k <= total; k++ {
		mtOpenUp(dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		e := mtResumeFixture(t, dir, mode)
		m := mode.merger()
		m.stopAt = k
		if !mtKill(m, e.up, e.ws) {
			t.Fatalf("a merge of %d changes was not killed at change %d", total, k)
		}
		if k%5 == 0 {
			again := mode.merger()
			again.stopAt = 1 + k%7
			mtKill(again, e.up, e.ws)
		}
		if _, err := mode.merger().run(e.up, e.ws); err != nil {
			t.Fatalf("killed at change %d, then: %v", k, err)
		}
		if d := mtDiff(want, mtSnap(t, e.ws), nil); len(d) > 0 {
			t.Fatalf("killed at change %d of %d and run again, the workspace differs from one merge's:\n%s", k, total, strings.Join(d, "\n"))
		}
		if names := mtNames(t, e.up); len(names) > 0 {
			t.Fatalf("killed at change %d and run again, upper keeps %q", k, names)
		}
		if _, err := unix.Getxattr(e.up, mergePending, nil); err != unix.ENODATA {
			t.Fatalf("killed at change %d and run again, the upper root keeps its undo record (%v)", k, err)
		}
	}
}

// mtFastDir is a new directory for the resume test's many trees: on
// tmpfs (/dev/shm) where it has user xattrs, which makes files ten times
// faster than a disk does, else in t.TempDir.
func mtFastDir(t *testing.T) string {
	d, err := os.MkdirTemp("/dev/shm", "custos-merge-test-")
	if err != nil || unix.Setxattr(d, "user.probe", []byte("1"), 0) != nil {
		if err == nil {
			_ = os.Remove(d)
		}
		d = t.TempDir()
	} else {
		t.Cleanup(func() { _ = os.RemoveAll(d) })
	}
	t.Cleanup(func() { mtOpenUp(d) })
	mtNeedXattrs(t, d)
	return d
}

// mtKill runs m until its simulated kill.
func mtKill(m *merger, up, ws string) (killed bool) {
	defer func() {
		if r := recover(); r != nil {
			if r != errMergeKilled {
				panic(r)
			}
			killed = true
		}
	}()
	_, _ = m.run(up, ws)
	return false
}

// mtResumeFixture builds, under dir, every case that keeps to its roots,
// each in a subdirectory of the workspace and of upper, with every time
// pinned (the same each build).
func mtResumeFixture(t *testing.T, dir string, mode mtMode) *mtEnv {
	e := &mtEnv{t: t, ws: filepath.Join(dir, "ws"), up: filepath.Join(dir, "up"), out: filepath.Join(dir, "out"), mode: mode}
	mtFile(t, filepath.Join(e.out, "target"), "outside", 0o644)
	mtFile(t, filepath.Join(e.out, "dir", "victim"), "victim", 0o644)
	for i, c := range mergeCases() {
		if c.roots || c.wantErr != nil {
			continue
		}
		sub := fmt.Sprintf("c%02d", i)
		ce := &mtEnv{t: t, ws: e.W(sub), up: e.U(sub), out: e.out, mode: mode}
		mtDir(t, ce.ws, 0o755)
		mtDir(t, ce.up, 0o755)
		c.setup(ce)
	}
	mtPin(t, e.ws, "")
	mtPin(t, e.up, "")
	return e
}

// mtPin sets the times of everything under root/rel to ones derived from
// each path, deepest first.
func mtPin(t testing.TB, root, rel string) {
	for _, name := range mtNames(t, filepath.Join(root, rel)) {
		r := filepath.Join(rel, name)
		p := filepath.Join(root, r)
		if mtLstat(t, p).Mode&unix.S_IFMT == unix.S_IFDIR {
			mtPin(t, root, r)
		}
		h := uint64(14695981039346656037)
		for i := 0; i < len(r); i++ {
			h = (h ^ uint64(r[i])) * 1099511628211
		}
		ts := []unix.Timespec{{Sec: 1_000_000_000 + int64(h%100_000_000), Nsec: int64(h % 1_000_000_000)}}
		ts = append(ts, ts[0])
		if err := mtAccess(filepath.Dir(p), func() error { return unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
			t.Fatal(err)
		}
	}
}

// mtOracleScript is what the real-overlay test runs, in the workspace
// through an overlay and directly on a copy of it; Apply must turn
// the first into the second. Times it pins (touch -d) are compared
// exactly; entries it changes at run time only have to be recent in both.
const mtOracleScript = `
rm file_del
rm -rf dir_del
rm -rf dir_re && mkdir dir_re && echo new > dir_re/x && mkdir dir_re/sub && echo n2 > dir_re/sub/y
echo more >> file_mod
printf 'replaced\n' > file_trunc
mkdir -p new/deep/deeper && echo deep > new/deep/deeper/f && chmod 750 new/deep
ln -s ../file_mod new/rel_link && ln -s /nonexistent/abs new/abs_link
chmod 700 dir_chmod
chmod 600 file_chmod
touch -d @1200000000 file_touch file_ro
mv file_mv dir_keep/file_mv_moved
mv dir_mv dir_mv_new
rm file2dir && mkdir file2dir && echo in > file2dir/in
rm -rf dir2file && echo now-a-file > dir2file
rm evil && mkdir evil && echo pwned > evil/passwd
rm evil_file && echo replaced > evil_file
mkfifo fifo_new && chmod 640 fifo_new
echo s > suid_new && chmod 4755 suid_new
rm lowfifo
echo h > hl_a && ln hl_a hl_b
ln file_mod hl_mod
echo x >> deep/a/b/c/f
rm deep/a/b/d/g
chmod 711 deep/a
rm link_old && ln -s new_target link_old
mv sym_mv sym_mv_new
touch -h -d @1300000000 sym_touch
rmdir empty_dir && mkdir empty_new
echo z > dir_keep/new_in_old
mkdir dir_keep/sub2 && : > dir_keep/sub2/empty
echo s > 'new sp ace'
echo r > dir_ro/r2 && chmod 555 dir_ro
mkdir locked && echo secret > locked/f && chmod 000 locked
echo ro > ro_new && chmod 444 ro_new
touch -d @1250000000 dir_keep dir_re new
`

// mtOracleTree is the workspace mtOracleScript starts from.
func mtOracleTree(t testing.TB, e *mtEnv) {
	for _, f := range []string{"file_del", "file_mod", "file_trunc", "file_chmod", "file_touch", "file_mv", "sp ace",
		"hl1", "file2dir", "dir_del/a", "dir_del/sub/b", "dir_re/old", "dir_re/sub/old2", "dir_chmod/f", "dir_keep/k1",
		"dir_mv/m1", "dir_mv/sub/m2", "dir2file/x", "dir2file/y/z", "dir_ro/r1", "deep/a/b/c/f", "deep/a/b/d/g"} {
		mtFile(t, e.W(f), "content of "+f+"\n", 0o644)
	}
	mtFile(t, e.W("file_ro"), "read-only\n", 0o644)
	if err := os.Link(e.W("hl1"), e.W("hl2")); err != nil {
		t.Fatal(err)
	}
	mtDir(t, e.W("empty_dir"), 0o755)
	for _, p := range []string{"file_mod", "file_ro", "dir_chmod", "dir_keep", "dir_mv", "dir_mv/m1"} {
		mtXattr(t, e.W(p), "user.keep", "kept "+p)
	}
	mtChmod(t, e.W("file_ro"), 0o444)
	mtLink(t, filepath.Join(e.out, "dir"), e.W("evil"))
	mtLink(t, filepath.Join(e.out, "target"), e.W("evil_file"))
	mtLink(t, "old_target", e.W("link_old"))
	mtLink(t, "file_mod", e.W("sym_mv"))
	mtLink(t, "file_mod", e.W("sym_touch"))
	mtFifo(t, e.W("lowfifo"), 0o644)
	mtPin(t, e.ws, "")
}

// TestMergeUpperRealOverlay is the oracle: commands run on a real overlay
// of the workspace (userxattr, as custos mounts it), then Apply,
// must leave the workspace as the same commands run on a copy of it do.
func TestMergeUpperRealOverlay(t *testing.T) {
	if out, err := exec.Command("unshare", "-Urm", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare -Urm does not work here (%v: %s): no real overlay to compare with", err, out)
	}
	for _, mode := range []mtMode{mtRename, mtCopy} {
		t.Run(mode.String(), func(t *testing.T) { mtOracle(t, mode) })
	}
}

func mtOracle(t *testing.T, mode mtMode) {
	e := newMtEnv(t, mtRename)
	ws2, work := filepath.Join(filepath.Dir(e.ws), "ws2"), filepath.Join(filepath.Dir(e.ws), "work")
	mtDir(t, work, 0o700)
	mtOracleTree(t, e)
	if out, err := exec.Command("cp", "-a", e.ws, ws2).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	if d := mtDiff(mtSnap(t, e.ws), mtSnap(t, ws2), nil); len(d) > 0 {
		t.Fatalf("cp -a made no faithful copy:\n%s", strings.Join(d, "\n"))
	}
	outBefore := mtSnap(t, e.out)
	direct := exec.Command("sh", "-ec", mtOracleScript)
	direct.Dir = ws2
	if out, err := direct.CombinedOutput(); err != nil {
		t.Fatalf("the script, run directly: %v: %s", err, out)
	}
	// What the merge does not apply as the command left it: the fifo is
	// not applied, the set-uid file loses its bit.
	if err := errors.Join(os.Remove(filepath.Join(ws2, "fifo_new")), unix.Chmod(filepath.Join(ws2, "suid_new"), 0o755)); err != nil {
		t.Fatal(err)
	}
	over := exec.Command("unshare", "-Urm", "sh", "-ec",
		`mount -t overlay overlay -o "lowerdir=$1,upperdir=$2,workdir=$3,userxattr" "$1"; cd "$1"; sh -ec "$4"`,
		"sh", e.ws, e.up, work, mtOracleScript)
	if out, err := over.CombinedOutput(); err != nil {
		t.Fatalf("the script, run on an overlay: %v: %s", err, out)
	}
	mtUpperHasAll(t, e.up)
	if _, err := mode.merger().run(e.up, e.ws); err != nil {
		t.Fatalf("merge: %v", err)
	}
	got, want := mtSnap(t, e.ws), mtSnap(t, ws2)
	if mode != mtRename {
		// The copy makes one file per name: hard links are not kept.
		for _, s := range []map[string]mtNode{got, want} {
			for p, n := range s {
				n.Nlink = 0
				s[p] = n
			}
		}
	}
	const recent = 1_500_000_000 // after every pinned time, before now
	d := mtDiff(got, want, func(p string, a, b mtNode) bool {
		if b.Mtime.Sec < recent {
			return true
		}
		if a.Mtime.Sec < recent {
			t.Errorf("%s: the script changed its time, the merge left %d", p, a.Mtime.Sec)
		}
		return false
	})
	if len(d) > 0 {
		t.Errorf("the merged workspace differs from the script's own result:\n%s", strings.Join(d, "\n"))
	}
	mtCheckClean(t, e, outBefore, false)
}

// mtUpperHasAll checks the real overlay's upper layer holds what the merge
// must handle, so the oracle proves something: whiteouts, opaque
// directories, origin xattrs.
func mtUpperHasAll(t *testing.T, up string) {
	var whiteouts, opaque, origin int
	for _, n := range mtSnap(t, up) {
		if n.Type == unix.S_IFCHR && n.Data == "0" {
			whiteouts++
		}
		opaque += strings.Count(n.Xattrs, "user.overlay.opaque=y")
		origin += strings.Count(n.Xattrs, "user.overlay.origin=")
	}
	if whiteouts == 0 || opaque == 0 || origin == 0 {
		t.Fatalf("the overlay's upper layer has %d whiteouts, %d opaque dirs, %d origin xattrs: want some of each", whiteouts, opaque, origin)
	}
}

// BenchmarkMergeUpper merges 2,000 new files in 20 new dirs, 200 changed
// files in 10 copied-up dirs and 50 whiteouts, on one file system.
func BenchmarkMergeUpper(b *testing.B) {
	base := b.TempDir()
	entries := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := filepath.Join(base, strconv.Itoa(i))
		ws, up := mtBenchTree(b, dir)
		b.StartTimer()
		st, err := Apply(up, ws)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		entries = st.Entries
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*entries), "ns/entry")
}

func mtBenchTree(b testing.TB, dir string) (ws, up string) {
	ws, up = filepath.Join(dir, "ws"), filepath.Join(dir, "up")
	file := func(p, data string) {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for d := range 10 {
		wd, od := filepath.Join(ws, fmt.Sprintf("old%02d", d)), filepath.Join(up, fmt.Sprintf("old%02d", d))
		mtDir(b, wd, 0o755)
		mtDir(b, od, 0o755)
		for f := range 25 {
			file(filepath.Join(wd, fmt.Sprintf("f%02d", f)), "old")
		}
		for f := range 20 {
			p := filepath.Join(od, fmt.Sprintf("f%02d", f))
			file(p, "changed")
			mtXattr(b, p, "user.overlay.origin", "")
		}
		for f := 20; f < 25; f++ {
			mtWhiteout(b, filepath.Join(od, fmt.Sprintf("f%02d", f)))
		}
		mtXattr(b, od, "user.overlay.origin", "")
		mtXattr(b, od, "user.overlay.impure", "y")
	}
	for d := range 20 {
		nd := filepath.Join(up, fmt.Sprintf("new%02d", d))
		mtDir(b, nd, 0o755)
		for f := range 100 {
			file(filepath.Join(nd, fmt.Sprintf("f%03d", f)), "new")
		}
	}
	return ws, up
}
