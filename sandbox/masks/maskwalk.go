package masks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/custos-dev/custos/sandbox/mount"
	"github.com/custos-dev/custos/sandbox/sysview"
)

// The expansion walk: which paths of the workspace (and of the system
// directories the sandbox shows) the deny patterns name right now.

// expansion collects masks.
type expansion struct {
	ws      string
	masks   map[string]*Mask
	entries int
}

func (x *expansion) add(m Mask) {
	if old, ok := x.masks[m.Path]; ok {
		if m.Kind == Hide {
			old.Kind, old.Rule = Hide, m.Rule
		}
		old.Dir = old.Dir || m.Dir
		return
	}
	x.masks[m.Path] = &m
}

func (x *expansion) count() error {
	x.entries++
	if x.entries > maxMaskWalkEntries {
		return fmt.Errorf("%w: more than %d files to check against the deny rules; anchor the rules to directories (dir/**, dir/file) so the walk can skip the rest", ErrMasks, maxMaskWalkEntries)
	}
	return nil
}

func (x *expansion) inWS(p string) bool { return p == x.ws || strings.HasPrefix(p, x.ws+"/") }

func (x *expansion) rel(p string) string {
	if p == x.ws {
		return "."
	}
	if strings.HasPrefix(p, x.ws+"/") {
		return p[len(x.ws)+1:]
	}
	return ""
}

// walkWorkspace matches every pattern that can name something in the
// workspace against its entries, descending only where a pattern can
// still match. Symbolic links are not followed.
func (x *expansion) walkWorkspace(pats []*denyPattern) error {
	var here []*denyPattern
	for _, p := range pats {
		if p.re != nil || p.all || p.base != nil || x.inWS(p.root) || strings.HasPrefix(x.ws+"/", strings.TrimSuffix(p.root, "/")+"/") {
			here = append(here, p)
		}
	}
	if len(here) == 0 {
		return nil
	}
	var rest []*denyPattern
	for _, p := range here {
		if p.all || (p.dirForm != nil && p.dirForm.Match(x.ws)) || (p.full != nil && p.full.Match(x.ws)) {
			if p.kind == Hide {
				return fmt.Errorf("%w: rule %q denies reading the whole workspace; a command cannot run in it", ErrMasks, p.spec)
			}
			x.add(Mask{Path: x.ws, Kind: ReadOnly, Dir: true, Rule: p.spec})
			continue
		}
		rest = append(rest, p)
	}
	return x.walk(x.ws, x.ws, rest)
}

// walk matches the entries of directory real, named logical in the rules
// (the two differ below a followed symlink), and masks at their real path.
func (x *expansion) walk(real, logical string, pats []*denyPattern) error {
	ents, err := os.ReadDir(real)
	if err != nil {
		// What the worker cannot list, the sandbox user cannot either.
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("%w: reading %s: %w", ErrMasks, real, err)
	}
	for _, e := range ents {
		if err := x.count(); err != nil {
			return err
		}
		abs := logical + "/" + e.Name()
		realAbs := real + "/" + e.Name()
		rel := x.rel(abs)
		isLink := e.Type()&fs.ModeSymlink != 0
		isDir := e.IsDir()
		var hit *denyPattern
		for _, p := range pats {
			if p.matches(abs, rel, e.Name(), isDir) && (hit == nil || p.kind == Hide) {
				hit = p
			}
		}
		if hit != nil {
			if err := x.matched(realAbs, isLink, isDir, hit); err != nil {
				return err
			}
			if isDir && hit.kind == Hide {
				continue // hidden as a whole: nothing below matters
			}
		}
		if isLink {
			if err := x.followLink(realAbs, abs, pats); err != nil {
				return err
			}
			continue
		}
		if !isDir {
			continue
		}
		var sub []*denyPattern
		for _, p := range pats {
			if hit != nil && hit.kind == ReadOnly && p.kind == ReadOnly {
				continue // already read-only as a whole
			}
			if p.mayMatchBelow(abs) {
				sub = append(sub, p)
			}
		}
		if len(sub) > 0 {
			if err := x.walk(realAbs, abs, sub); err != nil {
				return err
			}
		}
	}
	return nil
}

// followLink walks the target of a symlinked directory under the link's
// name for the patterns that name something below that name literally
// ("conf/*.pem" with conf a link to real-conf): a command reading
// conf/x.pem reads real-conf/x.pem, which the rules do not name. Patterns
// that match anywhere ("*.pem", "**/x") find the target under its own
// name, so they are not followed (which also keeps link loops and
// link-heavy trees such as pnpm's node_modules from multiplying the walk).
func (x *expansion) followLink(realAbs, logical string, pats []*denyPattern) error {
	var sub []*denyPattern
	for _, p := range pats {
		if p.namesBelow(logical) {
			sub = append(sub, p)
		}
	}
	if len(sub) == 0 {
		return nil
	}
	t, err := filepath.EvalSymlinks(realAbs)
	if err != nil || !x.inWS(t) || t == x.ws {
		return nil // dangling, or not visible in the sandbox
	}
	if fi, err := os.Stat(t); err != nil || !fi.IsDir() {
		return nil
	}
	return x.walk(t, logical, sub)
}

// matched records a match of p at abs.
func (x *expansion) matched(abs string, isLink, isDir bool, p *denyPattern) error {
	if !isLink {
		x.add(Mask{Path: abs, Kind: p.kind, Dir: isDir, Rule: p.spec})
		return nil
	}
	if p.kind == ReadOnly {
		return fmt.Errorf("%w: %s (rule %q) is a symbolic link, and a link cannot be made read-only by itself: deny its target, or replace the link by the file", ErrMasks, abs, p.spec)
	}
	// Reading the link reads its target: hide the target if the sandbox
	// can see it (the workspace; the rest of the host is not mounted, and
	// the system directories hold no secrets).
	t, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil // dangling or looping: nothing to read through it
	}
	if !x.inWS(t) || t == x.ws {
		if t == x.ws {
			return fmt.Errorf("%w: %s (rule %q) links to the workspace itself", ErrMasks, abs, p.spec)
		}
		return nil
	}
	fi, err := os.Stat(t)
	if err != nil {
		return nil
	}
	x.add(Mask{Path: t, Kind: p.kind, Dir: fi.IsDir(), Rule: p.spec})
	return nil
}

// literal handles a pattern naming one path: found through a symlinked
// directory, it is masked at its real place; missing, it gets a placeholder
// so a command cannot create it.
func (x *expansion) literal(p *denyPattern) error {
	if p.literal == "" || !x.inWS(p.literal) || p.literal == x.ws {
		return nil
	}
	if _, found := x.masks[p.literal]; found {
		return nil // the walk reached it under this very name: no link on the way
	}
	real, exists, ok := resolveForCreate(p.literal)
	if !ok || !x.inWS(real) || real == x.ws {
		return nil // below a file, or leads out of the workspace
	}
	if !exists {
		x.add(Mask{Path: real, Kind: p.kind, Dir: p.literalDir, Missing: true, Rule: p.spec})
		return nil
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return nil
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return x.matched(real, true, false, p)
	}
	if p.literalDir && !fi.IsDir() {
		// "X/**" where X is a file: nothing below it to read; for Edit,
		// the file is made read-only so it cannot be replaced by a
		// directory holding new files.
		if p.kind == ReadOnly {
			x.add(Mask{Path: real, Kind: ReadOnly, Rule: p.spec})
		}
		return nil
	}
	x.add(Mask{Path: real, Kind: p.kind, Dir: fi.IsDir(), Rule: p.spec})
	return nil
}

// resolveForCreate resolves the directories above p (not p itself) and
// reports whether p exists. ok is false when an existing ancestor is not a
// directory.
func resolveForCreate(p string) (real string, exists, ok bool) {
	parent, base := filepath.Dir(p), filepath.Base(p)
	var missing []string
	for {
		rp, err := filepath.EvalSymlinks(parent)
		if err == nil {
			fi, err := os.Stat(rp)
			if err != nil || !fi.IsDir() {
				return "", false, false
			}
			real = filepath.Join(append(append([]string{rp}, missing...), base)...)
			if len(missing) > 0 {
				return real, false, true
			}
			_, err = os.Lstat(real)
			return real, err == nil, true
		}
		if !errors.Is(err, fs.ErrNotExist) || parent == "/" {
			return "", false, false
		}
		missing = append([]string{filepath.Base(parent)}, missing...)
		parent = filepath.Dir(parent)
	}
}

// outside masks what an absolute Read-deny pattern names outside the
// workspace but inside the system directories the sandbox shows. Writes
// outside the workspace fail anyway, so Edit patterns need nothing here.
func (x *expansion) outside(p *denyPattern) error {
	if p.kind != Hide || p.full == nil || x.inWS(p.root) || strings.HasPrefix(x.ws+"/", p.root+"/") || p.root == "/" && p.segs == nil {
		return nil
	}
	visible := visibleSystemPaths()
	if p.literal != "" {
		// One path: hide it where the sandbox shows it, under its own name
		// (an /etc entry is bound at its name) and under its real one
		// (/etc/os-release is /usr/lib/os-release).
		names := []string{p.literal}
		if real, err := filepath.EvalSymlinks(p.literal); err == nil && real != p.literal {
			names = append(names, real)
		}
		for _, n := range names {
			fi, err := os.Stat(n)
			if err != nil || !underAny(n, visible) {
				continue
			}
			x.add(Mask{Path: n, Kind: Hide, Dir: fi.IsDir(), Rule: p.spec})
		}
		return nil
	}
	for _, v := range visible {
		start := ""
		switch {
		case v == p.root || strings.HasPrefix(v, p.root+"/") || p.root == "/":
			start = v
		case strings.HasPrefix(p.root, v+"/"):
			start = p.root
		default:
			continue
		}
		fi, err := os.Stat(start) // an /etc entry may be a link: bound as its target
		if err != nil {
			continue
		}
		if err := x.count(); err != nil {
			return err
		}
		if p.matches(start, "", filepath.Base(start), fi.IsDir()) {
			x.add(Mask{Path: start, Kind: Hide, Dir: fi.IsDir(), Rule: p.spec})
			continue
		}
		if fi.IsDir() && p.mayMatchBelow(start) {
			if err := x.walk(start, start, []*denyPattern{p}); err != nil {
				return err
			}
		}
	}
	return nil
}

// visibleSystemPaths are the host paths the sandbox shows (the profile's
// system mounts, each /etc entry by itself rather than folded into the
// /etc view); the merged-/usr links (/bin -> usr/bin) are left out, their
// targets are listed.
func visibleSystemPaths() []string {
	var out []string
	for _, m := range sysview.Probe(sysview.RootEntries, sysview.EtcPaths()) {
		if m.Kind == mount.ROBind {
			out = append(out, m.Dst)
		}
	}
	return out
}

// underAny reports whether p is one of dirs or below one.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// hardLinks masks the other names of masked regular files that have more
// than one: without it, a hard link made earlier would read or change the
// denied content.
func (x *expansion) hardLinks() error {
	type key struct{ dev, ino uint64 }
	want := map[key]*Mask{}
	for _, m := range x.masks {
		if m.Dir || m.Missing || !x.inWS(m.Path) {
			continue
		}
		fi, err := os.Lstat(m.Path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			want[key{uint64(st.Dev), st.Ino}] = m
		}
	}
	if len(want) == 0 {
		return nil
	}
	var found []Mask
	err := filepath.WalkDir(x.ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if err := x.count(); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			if m := want[key{uint64(st.Dev), st.Ino}]; m != nil && p != m.Path {
				found = append(found, Mask{Path: p, Kind: m.Kind, Rule: m.Rule})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, m := range found {
		x.add(m)
	}
	return nil
}

// result sorts the masks, drops those under a hidden directory (invisible
// anyway, and a mount point there could not be reached), and lists the
// pins: directories strictly between the workspace and a mask, not at or
// under a masked directory.
func (x *expansion) result() ([]Mask, []string) {
	paths := make([]string, 0, len(x.masks))
	for p := range x.masks {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var masks []Mask
	var dirs []Mask
	under := func(p string, list []Mask, orSame bool) bool {
		for _, d := range list {
			if (orSame && p == d.Path) || strings.HasPrefix(p, d.Path+"/") {
				return true
			}
		}
		return false
	}
	var hidden []Mask
	for _, p := range paths {
		m := *x.masks[p]
		if under(p, hidden, false) {
			continue
		}
		masks = append(masks, m)
		if m.Dir {
			dirs = append(dirs, m)
			if m.Kind == Hide {
				hidden = append(hidden, m)
			}
		}
	}
	pinSet := map[string]bool{}
	for _, m := range masks {
		if !x.inWS(m.Path) || m.Path == x.ws {
			continue
		}
		for d := filepath.Dir(m.Path); d != x.ws && x.inWS(d); d = filepath.Dir(d) {
			if !under(d, dirs, true) {
				pinSet[d] = true
			}
		}
	}
	pins := make([]string, 0, len(pinSet))
	for d := range pinSet {
		pins = append(pins, d)
	}
	sort.Strings(pins)
	return masks, pins
}
