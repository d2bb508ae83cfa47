package masks

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// Permission rules become sandbox rules, the way Anthropic's
// sandbox-runtime derives its bubblewrap mounts from Read and Edit deny
// rules: at the start of every command the deny patterns are expanded
// against the workspace as it is at that moment, and each match becomes a
// mount:
//
//   - Read-denied (Hide): an empty, mode-000, read-only file or
//     directory is bound over it, so reading fails with "Permission
//     denied", names below a directory are hidden, and nothing can be
//     written, created, renamed or deleted there (a mount point cannot be
//     renamed or unlinked: EBUSY).
//   - Edit-denied (ReadOnly): it is bound read-only onto itself.
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
// the rest. Made by the mount step (mountinit.go), 250 masks (and their
// pins) cost a call about 33 ms and 1000 about 73 ms; made by bubblewrap,
// whose setup grows with the square of the mounts (it rereads the mount
// table for each), 0.25 s and 2.9 s.
// They are variables so tests can lower them.
var (
	maxMaskWalkEntries = 200_000
	maxMasks           = 1024
)

// ErrMasks is wrapped by every error about turning deny rules into masks.
var ErrMasks = errors.New("sandbox: deny rules cannot be enforced")

// Kind is what a mask does to a path.
type Kind string

const (
	// Hide: the path is unreadable (Read deny); it is read-only too.
	Hide Kind = "hide"
	// ReadOnly: the path is read-only (Edit deny).
	ReadOnly Kind = "readonly"
)

// Mask is one masked path.
type Mask struct {
	// Path is absolute and free of symbolic links.
	Path string
	Kind Kind
	Dir  bool
	// Missing: the path does not exist; a placeholder is created for the
	// run so it cannot be created.
	Missing bool
	// Rule is the pattern that named it.
	Rule string
}

// Plan is what a set of deny patterns means for a workspace right now.
type Plan struct {
	Workspace string
	// Masks are sorted by path, so a directory comes before what is below it.
	Masks []Mask
	// Pins are the directories between the workspace and a mask, sorted.
	Pins []string
	// hidden indexes the Hide paths for Hides (nil: scan Masks).
	hidden map[string]bool
}

// Empty reports whether the plan changes nothing.
func (p Plan) Empty() bool { return len(p.Masks) == 0 }

// Sources are what masks bind over paths: an empty mode-000 file and
// directory for hidden ones, an empty directory for missing ones.
type Sources struct {
	HideFile, HideDir, Empty string
}

// Args returns the bubblewrap arguments of the plan: pins (to go right after
// the workspace bind, before anything mounted below it) and masks (to go
// last, on top of everything).
func (p Plan) Args(src Sources) (pins, masks []string) {
	for _, d := range p.Pins {
		pins = append(pins, "--bind", d, d)
	}
	for _, m := range p.Masks {
		from := m.Path
		switch {
		case m.Missing:
			from = src.Empty
		case m.Kind == Hide && m.Dir:
			from = src.HideDir
		case m.Kind == Hide:
			from = src.HideFile
		}
		masks = append(masks, "--ro-bind", from, m.Path)
	}
	return pins, masks
}

// Hides reports whether rel (workspace-relative, slash-separated) is hidden
// by a Hide mask: the path itself or a directory above it. Glob and Grep
// use it to leave masked files out of their results.
func (p Plan) Hides(rel string) bool {
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
		if m.Kind != Hide {
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
func (p Plan) Covers(rel string) bool {
	abs := filepath.Join(p.Workspace, filepath.FromSlash(rel))
	for _, m := range p.Masks {
		if abs == m.Path || (m.Dir && strings.HasPrefix(abs, m.Path+"/")) || m.Path == p.Workspace {
			return true
		}
	}
	return false
}

// Expand expands Read-deny and Edit-deny patterns against the
// workspace ws (absolute, symlinks resolved) as it is now. It only reads the
// file system. An error wraps ErrMasks and names the rule or the limit.
func Expand(ws string, readDeny, editDeny []string) (Plan, error) {
	plan := Plan{Workspace: ws}
	if len(readDeny)+len(editDeny) == 0 {
		return plan, nil
	}
	if !filepath.IsAbs(ws) || filepath.Clean(ws) != ws || ws == "/" {
		return plan, fmt.Errorf("%w: workspace %q must be an absolute, clean path below /", ErrMasks, ws)
	}
	var pats []*denyPattern
	for _, l := range []struct {
		kind  Kind
		specs []string
	}{{Hide, readDeny}, {ReadOnly, editDeny}} {
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
		if m.Kind == Hide {
			plan.hidden[m.Path] = true
		}
	}
	if len(plan.Masks)+len(plan.Pins) > maxMasks {
		return plan, fmt.Errorf("%w: the deny rules match %d paths (limit %d); deny whole directories (dir/**) instead of many files", ErrMasks, len(plan.Masks)+len(plan.Pins), maxMasks)
	}
	return plan, nil
}

// DeniedBy returns the first pattern that names the workspace-relative
// path rel (slash-separated) or a directory above it, or "". The file tools
// use it on the real path they are about to touch (symlinks resolved),
// which a deny rule may name when the path the model wrote does not.
func DeniedBy(ws, rel string, isDir bool, patterns []string) (string, error) {
	m, err := NewDenyMatcher(ws, patterns)
	if err != nil {
		return "", err
	}
	return m.Match(rel, isDir), nil
}

// DenyMatcher matches workspace paths against deny patterns compiled once,
// for tools that check every entry of a walk (Glob, Grep) without the
// whole expansion.
type DenyMatcher struct {
	ws   string
	pats []*denyPattern
}

// NewDenyMatcher compiles the patterns for the workspace ws.
func NewDenyMatcher(ws string, patterns []string) (*DenyMatcher, error) {
	m := &DenyMatcher{ws: ws}
	for _, s := range patterns {
		p, err := compileDeny(s, ws, Hide)
		if err != nil {
			return nil, err
		}
		m.pats = append(m.pats, p)
	}
	return m, nil
}

// Match returns the first pattern naming rel (workspace-relative,
// slash-separated) or a directory above it, or "".
func (m *DenyMatcher) Match(rel string, isDir bool) string {
	rel = path.Clean(rel)
	if rel == "." || strings.HasPrefix(rel, "../") || rel == ".." {
		return ""
	}
	for _, p := range m.pats {
		if p.all {
			return p.spec
		}
		for cur, dir := rel, isDir; cur != "."; cur, dir = path.Dir(cur), true {
			if p.matches(m.ws+"/"+cur, cur, path.Base(cur), dir) {
				return p.spec
			}
		}
	}
	return ""
}
