package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"

	"github.com/gobwas/glob"
)

// Permission rules become sandbox rules (issue 8 §1), the way Anthropic's
// sandbox-runtime derives its bubblewrap mounts from Read and Edit deny
// rules: at the start of every command the deny patterns are expanded
// against the workspace as it is at that moment, and each match becomes a
// mount:
//
//   - Read-denied (MaskHide): an empty, mode-000, read-only file or
//     directory is bound over it, so reading fails with "Permission
//     denied", names below a directory are hidden, and nothing can be
//     written, created, renamed or deleted there (a mount point cannot be
//     renamed or unlinked: EBUSY).
//   - Edit-denied (MaskReadOnly): it is bound read-only onto itself.
//   - A denied path that does not exist yet, when a rule names it exactly
//     (".env", "config/prod.json", "secrets/**" for the directory
//     "secrets"), gets an empty directory created on the host for the run,
//     an empty read-only directory bound over it, and removed afterwards,
//     so nothing can be created there ("Is a directory", "Read-only file
//     system"). A directory, not a file: git ignores an empty directory,
//     where an unreadable placeholder file would break `git add -A`. Wildcard rules ("*.pem", "**/id_*") cannot name
//     files that do not exist: a file created later by a command is masked
//     from the next command on (and Read, Glob and Grep refuse or skip it
//     at once).
//
// Directories between the workspace and a mask are bound onto themselves
// (pins), so a command cannot rename a parent away from under a rule
// ("mv config cfg" to read cfg/.env in the next command).
//
// The patterns are the rule engine's path globs (approval.Policy
// SandboxDenies): relative ones are relative to the workspace, a pattern
// without "/" matches a base name at any depth, "X/**" covers directory X
// as a whole, "re:" patterns are regular expressions matched against the
// absolute and the workspace-relative path. Matching is on the path as it
// is on disk; a match that is a symbolic link masks the link's target when
// it lies in the workspace (Read), and is refused for Edit (a link itself
// cannot be made read-only by a mount). Other names of a masked file (hard
// links) are masked too.

// Bounds of one expansion. Beyond them the command is refused (fail
// closed): silently masking only part of what a rule names would un-deny
// the rest. bubblewrap's setup grows with the square of the mounts (it
// rereads the mount table for each): 250 masks cost ~0.2 s, 1000 ~1.8 s.
// They are variables so tests can lower them.
var (
	maxMaskWalkEntries = 200_000
	maxMasks           = 1024
)

// ErrMasks is wrapped by every error about turning deny rules into masks.
var ErrMasks = errors.New("sandbox: deny rules cannot be enforced")

// MaskKind is what a mask does to a path.
type MaskKind string

const (
	// MaskHide: the path is unreadable (Read deny); it is read-only too.
	MaskHide MaskKind = "hide"
	// MaskReadOnly: the path is read-only (Edit deny).
	MaskReadOnly MaskKind = "readonly"
)

// Mask is one masked path.
type Mask struct {
	// Path is absolute and free of symbolic links.
	Path string
	Kind MaskKind
	Dir  bool
	// Missing: the path does not exist; a placeholder is created for the
	// run so it cannot be created.
	Missing bool
	// Rule is the pattern that named it.
	Rule string
}

// MaskPlan is what a set of deny patterns means for a workspace right now.
type MaskPlan struct {
	Workspace string
	// Masks are sorted by path, so a directory comes before what is below it.
	Masks []Mask
	// Pins are the directories between the workspace and a mask, sorted.
	Pins []string
	// hidden indexes the MaskHide paths for Hides (nil: scan Masks).
	hidden map[string]bool
}

// Empty reports whether the plan changes nothing.
func (p MaskPlan) Empty() bool { return len(p.Masks) == 0 }

// MaskSources are what masks bind over paths: an empty mode-000 file and
// directory for hidden ones, an empty directory for missing ones.
type MaskSources struct {
	HideFile, HideDir, Empty string
}

// Args returns the bubblewrap arguments of the plan: pins (to go right after
// the workspace bind, before anything mounted below it) and masks (to go
// last, on top of everything).
func (p MaskPlan) Args(src MaskSources) (pins, masks []string) {
	for _, d := range p.Pins {
		pins = append(pins, "--bind", d, d)
	}
	for _, m := range p.Masks {
		from := m.Path
		switch {
		case m.Missing:
			from = src.Empty
		case m.Kind == MaskHide && m.Dir:
			from = src.HideDir
		case m.Kind == MaskHide:
			from = src.HideFile
		}
		masks = append(masks, "--ro-bind", from, m.Path)
	}
	return pins, masks
}

// Hides reports whether rel (workspace-relative, slash-separated) is hidden
// by a MaskHide mask: the path itself or a directory above it. Glob and Grep
// use it to leave masked files out of their results.
func (p MaskPlan) Hides(rel string) bool {
	abs := filepath.Join(p.Workspace, filepath.FromSlash(rel))
	if p.hidden != nil {
		// A file is hidden by its own mask, or by a directory's above it.
		for cur := abs; strings.HasPrefix(cur, p.Workspace+"/"); cur = filepath.Dir(cur) {
			if p.hidden[cur] {
				return true
			}
		}
		return false
	}
	for _, m := range p.Masks {
		if m.Kind != MaskHide {
			continue
		}
		if abs == m.Path || (m.Dir && strings.HasPrefix(abs, m.Path+"/")) {
			return true
		}
	}
	return false
}

// Covers reports whether rel (workspace-relative, slash-separated) is
// masked in any way: by its own mask or a masked directory above it.
func (p MaskPlan) Covers(rel string) bool {
	abs := filepath.Join(p.Workspace, filepath.FromSlash(rel))
	for _, m := range p.Masks {
		if abs == m.Path || (m.Dir && strings.HasPrefix(abs, m.Path+"/")) || m.Path == p.Workspace {
			return true
		}
	}
	return false
}

// ExpandMasks expands Read-deny and Edit-deny patterns against the
// workspace ws (absolute, symlinks resolved) as it is now. It only reads the
// file system. An error wraps ErrMasks and names the rule or the limit.
func ExpandMasks(ws string, readDeny, editDeny []string) (MaskPlan, error) {
	plan := MaskPlan{Workspace: ws}
	if len(readDeny)+len(editDeny) == 0 {
		return plan, nil
	}
	if !filepath.IsAbs(ws) || filepath.Clean(ws) != ws || ws == "/" {
		return plan, fmt.Errorf("%w: workspace %q must be an absolute, clean path below /", ErrMasks, ws)
	}
	var pats []*denyPattern
	for _, l := range []struct {
		kind  MaskKind
		specs []string
	}{{MaskHide, readDeny}, {MaskReadOnly, editDeny}} {
		for _, s := range l.specs {
			p, err := compileDeny(s, ws, l.kind)
			if err != nil {
				return plan, err
			}
			pats = append(pats, p)
		}
	}
	x := &expansion{ws: ws, masks: map[string]*Mask{}}
	if err := x.walkWorkspace(pats); err != nil {
		return plan, err
	}
	for _, p := range pats {
		if err := x.outside(p); err != nil {
			return plan, err
		}
	}
	for _, p := range pats {
		if err := x.literal(p); err != nil {
			return plan, err
		}
	}
	if err := x.hardLinks(); err != nil {
		return plan, err
	}
	plan.Masks, plan.Pins = x.result()
	plan.hidden = map[string]bool{}
	for _, m := range plan.Masks {
		if m.Kind == MaskHide {
			plan.hidden[m.Path] = true
		}
	}
	if len(plan.Masks)+len(plan.Pins) > maxMasks {
		return plan, fmt.Errorf("%w: the deny rules match %d paths (limit %d); deny whole directories (dir/**) instead of many files", ErrMasks, len(plan.Masks)+len(plan.Pins), maxMasks)
	}
	return plan, nil
}

// denyPattern is one compiled deny pattern.
type denyPattern struct {
	spec string
	kind MaskKind
	// all: the pattern covers the whole workspace.
	all bool
	// base: no "/": matches base names at any depth of the workspace.
	base glob.Glob
	// full matches the absolute path; dirForm, for "X/**", matches X.
	full, dirForm anyGlob
	re            *regexp.Regexp
	// segs is the absolute pattern split at "/", for pruning the walk; nil
	// when the pattern cannot be split safely.
	segs []segment
	// literal is the absolute path the pattern names exactly ("" for
	// wildcards); literalDir says it names a directory ("X/**").
	literal    string
	literalDir bool
	// root is the deepest directory every match lies below.
	root string
}

type segment struct {
	g        glob.Glob
	globstar bool
}

// compileDeny compiles one pattern, normalised the way the rule engine
// normalises path rules (./ dropped, a trailing / meaning "everything
// below", cleaned).
func compileDeny(spec, ws string, kind MaskKind) (*denyPattern, error) {
	p := &denyPattern{spec: spec, kind: kind}
	s := strings.TrimSpace(spec)
	bad := func(why string, err error) (*denyPattern, error) {
		if err != nil {
			return nil, fmt.Errorf("%w: pattern %q: %s: %w", ErrMasks, spec, why, err)
		}
		return nil, fmt.Errorf("%w: pattern %q: %s", ErrMasks, spec, why)
	}
	if s == "" {
		return bad("empty", nil)
	}
	if r, ok := strings.CutPrefix(s, "re:"); ok {
		re, err := regexp.Compile(r)
		if err != nil {
			return bad("bad regular expression", err)
		}
		p.re, p.root = re, "/"
		return p, nil
	}
	if s == "~" || strings.HasPrefix(s, "~/") {
		return bad("~ must be expanded by the caller", nil)
	}
	s = strings.TrimPrefix(s, "./")
	trailing := strings.HasSuffix(s, "/")
	s = path.Clean(s)
	if trailing && s != "/" && s != "." {
		s += "/**"
	}
	abs := strings.HasPrefix(s, "/")
	if !abs && (s == ".." || strings.HasPrefix(s, "../")) {
		return bad("a relative pattern must not leave the workspace", nil)
	}
	if !abs && (s == "." || strings.Trim(s, "*") == "") {
		p.all, p.root = true, ws
		return p, nil
	}
	if !abs && !strings.Contains(s, "/") {
		g, err := glob.Compile(s, '/')
		if err != nil {
			return bad("bad glob", err)
		}
		p.base, p.root = g, ws
		if !hasMeta(s) {
			p.literal = filepath.Join(ws, unescape(s))
		}
		return p, nil
	}
	full := s
	if !abs {
		full = escapeMeta(ws) + "/" + s
	}
	g, err := compileVariants(full)
	if err != nil {
		return bad("bad glob", err)
	}
	p.full = g
	if d, ok := strings.CutSuffix(full, "/**"); ok && d != "" {
		if d == escapeMeta(ws) {
			p.all, p.root = true, ws
			return p, nil
		}
		if p.dirForm, err = compileVariants(d); err != nil {
			return bad("bad glob", err)
		}
		if !hasMeta(d) {
			p.literal, p.literalDir = unescape(d), true
		}
	} else if !hasMeta(full) {
		p.literal = unescape(full)
	}
	p.segs = splitSegments(full)
	p.root = literalRoot(full)
	return p, nil
}

// matches reports whether the pattern names the path (abs, and rel inside
// the workspace or "").
func (p *denyPattern) matches(abs, rel, name string, dir bool) bool {
	switch {
	case p.all:
		return rel != ""
	case p.re != nil:
		return p.re.MatchString(abs) || (rel != "" && p.re.MatchString(rel))
	case p.base != nil:
		return rel != "" && p.base.Match(name)
	case p.literal != "":
		// Same answer as the globs below, without running them: most
		// rules name paths exactly, and every entry meets every rule.
		if p.literalDir {
			return (dir && abs == p.literal) || strings.HasPrefix(abs, p.literal+"/")
		}
		return abs == p.literal
	}
	return p.full.Match(abs) || (dir && p.dirForm != nil && p.dirForm.Match(abs))
}

// mayMatchBelow reports whether anything below directory abs can match.
func (p *denyPattern) mayMatchBelow(abs string) bool {
	if p.all || p.re != nil || p.base != nil || p.segs == nil {
		return true
	}
	parts := strings.Split(strings.TrimPrefix(abs, "/"), "/")
	for i, d := range parts {
		if i >= len(p.segs) {
			return false
		}
		if p.segs[i].globstar {
			return true
		}
		if !p.segs[i].g.Match(d) {
			return false
		}
	}
	return len(parts) < len(p.segs)
}

// expansion collects masks.
type expansion struct {
	ws      string
	masks   map[string]*Mask
	entries int
}

func (x *expansion) add(m Mask) {
	if old, ok := x.masks[m.Path]; ok {
		if m.Kind == MaskHide {
			old.Kind, old.Rule = MaskHide, m.Rule
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
			if p.kind == MaskHide {
				return fmt.Errorf("%w: rule %q denies reading the whole workspace; a command cannot run in it", ErrMasks, p.spec)
			}
			x.add(Mask{Path: x.ws, Kind: MaskReadOnly, Dir: true, Rule: p.spec})
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
			if p.matches(abs, rel, e.Name(), isDir) && (hit == nil || p.kind == MaskHide) {
				hit = p
			}
		}
		if hit != nil {
			if err := x.matched(realAbs, isLink, isDir, hit); err != nil {
				return err
			}
			if isDir && hit.kind == MaskHide {
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
			if hit != nil && hit.kind == MaskReadOnly && p.kind == MaskReadOnly {
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

// namesBelow reports whether the pattern names paths below abs through
// literal (or single-segment wildcard) segments only, no globstar.
func (p *denyPattern) namesBelow(abs string) bool {
	if p.full == nil || p.segs == nil {
		return false
	}
	parts := strings.Split(strings.TrimPrefix(abs, "/"), "/")
	if len(parts) >= len(p.segs) {
		return false
	}
	for i, d := range parts {
		if p.segs[i].globstar || !p.segs[i].g.Match(d) {
			return false
		}
	}
	return true
}

// matched records a match of p at abs.
func (x *expansion) matched(abs string, isLink, isDir bool, p *denyPattern) error {
	if !isLink {
		x.add(Mask{Path: abs, Kind: p.kind, Dir: isDir, Rule: p.spec})
		return nil
	}
	if p.kind == MaskReadOnly {
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
		return nil // "X/**" where X is a file: nothing below it
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
	if p.kind != MaskHide || p.full == nil || x.inWS(p.root) || strings.HasPrefix(x.ws+"/", p.root+"/") || p.root == "/" && p.segs == nil {
		return nil
	}
	for _, v := range visibleSystemPaths() {
		start := ""
		switch {
		case v == p.root || strings.HasPrefix(v, p.root+"/") || p.root == "/":
			start = v
		case strings.HasPrefix(p.root, v+"/"):
			start = p.root
		default:
			continue
		}
		fi, err := os.Lstat(start)
		if err != nil {
			continue
		}
		if err := x.count(); err != nil {
			return err
		}
		if p.matches(start, "", filepath.Base(start), fi.IsDir()) {
			x.add(Mask{Path: start, Kind: MaskHide, Dir: fi.IsDir(), Rule: p.spec})
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

// visibleSystemPaths are the host paths bound into the sandbox (see
// profileArgs), symlinks (merged /usr) left out: their targets are listed.
func visibleSystemPaths() []string {
	var out []string
	for _, p := range rootEntries {
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			out = append(out, p)
		}
	}
	for _, e := range etcAllow {
		p := "/etc/" + e
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
			out = append(out, p)
		}
	}
	return out
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
			if m.Kind == MaskHide {
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

// hasMeta reports an unescaped glob metacharacter.
func hasMeta(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?', '[', ']', '{', '}':
			return true
		}
	}
	return false
}

// escapeMeta quotes glob metacharacters so s matches itself.
func escapeMeta(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unescape removes glob escapes from a pattern without metacharacters.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// splitSegments splits an absolute pattern at "/" for pruning, or returns
// nil when a class or alternation spans a "/" (then nothing is pruned).
func splitSegments(full string) []segment {
	var parts []string
	depth, start := 0, 1
	for i := 1; i < len(full); i++ {
		switch full[i] {
		case '\\':
			i++
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case '/':
			if depth != 0 {
				return nil
			}
			parts = append(parts, full[start:i])
			start = i + 1
		}
	}
	parts = append(parts, full[start:])
	segs := make([]segment, len(parts))
	for i, s := range parts {
		if strings.Contains(s, "**") {
			segs[i].globstar = true
			continue
		}
		g, err := glob.Compile(s, '/')
		if err != nil {
			return nil
		}
		segs[i].g = g
	}
	return segs
}

// literalRoot is the deepest directory of an absolute pattern that has no
// metacharacter: every match lies below it.
func literalRoot(full string) string {
	root := "/"
	parts := strings.Split(strings.TrimPrefix(full, "/"), "/")
	for _, s := range parts[:len(parts)-1] {
		if hasMeta(s) {
			break
		}
		root = path.Join(root, unescape(s))
	}
	return root
}

// DeniedBy returns the first pattern that names the workspace-relative
// path rel (slash-separated) or a directory above it, or "". The file tools
// use it on the real path they are about to touch (symlinks resolved),
// which a deny rule may name when the path the model wrote does not.
func DeniedBy(ws, rel string, isDir bool, patterns []string) (string, error) {
	rel = path.Clean(rel)
	if rel == "." || strings.HasPrefix(rel, "../") || rel == ".." {
		return "", nil
	}
	for _, s := range patterns {
		p, err := compileDeny(s, ws, MaskHide)
		if err != nil {
			return "", err
		}
		if p.all {
			return s, nil
		}
		for cur, dir := rel, isDir; cur != "."; cur, dir = path.Dir(cur), true {
			abs := ws + "/" + cur
			if p.matches(abs, cur, path.Base(cur), dir) {
				return s, nil
			}
		}
	}
	return "", nil
}

// anyGlob matches when one of its globs does.
type anyGlob []glob.Glob

func (g anyGlob) Match(s string) bool {
	for _, x := range g {
		if x.Match(s) {
			return true
		}
	}
	return false
}

// compileVariants compiles a pattern with "/" as separator, together with
// its variants where a "**/" matches nothing, so "**/secrets/**" also names
// a top-level secrets/ (gitignore style; gobwas' ** alone needs the
// separators around it). Stricter than the glob alone, which is the safe
// side for a deny rule. At most the first four "**/" are expanded.
func compileVariants(pattern string) (anyGlob, error) {
	var out anyGlob
	for _, v := range globstarVariants(pattern, 0, 4) {
		g, err := glob.Compile(v, '/')
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

func globstarVariants(p string, from, budget int) []string {
	j := strings.Index(p[from:], "**/")
	if j < 0 || budget == 0 {
		return []string{p}
	}
	j += from
	keep := globstarVariants(p, j+3, budget-1)
	drop := globstarVariants(p[:j]+p[j+3:], j, budget-1)
	return append(keep, drop...)
}
