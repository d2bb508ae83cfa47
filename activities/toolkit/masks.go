package toolkit

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/custos-dev/custos/sandbox/masks"
	"github.com/custos-dev/custos/sandbox/pathguard"
)

// DeniedTarget checks the real path a file tool is about to touch against the
// deny patterns (a deny rule holds whichever tool and whichever name). The
// policy judged the path as the model wrote it; through a symlink, a
// symlinked directory, or (for reading) a hard link, that can be a denied
// file. It returns the refusal text, or "".
func DeniedTarget(tool string, tgt *Target, patterns []string, read bool) string {
	if len(patterns) == 0 {
		return ""
	}
	refuse := func(why string) string {
		return fmt.Sprintf("%s: %s is denied by a deny rule %s under its real name", tool, tgt.Show, why)
	}
	if read {
		h, err := NewHider(tgt.WS, patterns)
		if err != nil {
			return fmt.Sprintf("%s: %v", tool, err)
		}
		return HiddenTarget(tool, tgt, h)
	}
	rule, err := masks.DeniedBy(tgt.WS, tgt.Show, false, patterns)
	if err != nil {
		return fmt.Sprintf("%s: %v", tool, err)
	}
	if rule != "" {
		return refuse("(" + rule + ")")
	}
	if anchored := anchoredPatterns(patterns); len(anchored) > 0 {
		plan, err := masks.Expand(tgt.WS, nil, anchored)
		if err != nil {
			return fmt.Sprintf("%s: %v", tool, err)
		}
		if plan.Covers(tgt.Show) {
			return refuse("(through a symlinked directory)")
		}
	}
	return ""
}

// HiddenTarget is DeniedTarget for reading, with the Read deny patterns
// compiled already (NewHider): a tool that also filters what it shows by
// the same rules (LSP) compiles them once per call.
func HiddenTarget(tool string, tgt *Target, h *Hider) string {
	hide, err := h.HidesFile(tgt.Root, tgt.Show)
	if err != nil {
		return fmt.Sprintf("%s: %v", tool, err)
	}
	if hide {
		return fmt.Sprintf("%s: %s is denied by a deny rule (Read) under its real name", tool, tgt.Show)
	}
	return ""
}

// anchoredPatterns are the patterns whose match depends on the directories
// of a path (a "/" in them), not only on its base name: those a symlinked
// directory can lead around, which a pruned expansion finds.
func anchoredPatterns(patterns []string) []string {
	var out []string
	for _, p := range patterns {
		if strings.Contains(p, "/") && !strings.HasPrefix(p, "re:") {
			out = append(out, p)
		}
	}
	return out
}

// Hider decides which files Glob and Grep leave out: what the deny
// patterns name (the path or a directory above it), what an anchored
// pattern names through a symlinked directory (a pruned expansion), and
// other names of a hidden file (hard links: the full expansion, computed
// only when a file has more than one name). Unlike a full expansion up
// front, it works on workspaces of any size.
type Hider struct {
	ws       string
	patterns []string
	match    *masks.DenyMatcher
	anchored masks.Plan
	full     *masks.Plan
}

// NewHider returns nil when there is nothing to hide.
func NewHider(ws string, patterns []string) (*Hider, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	m, err := denyMatcher(ws, patterns)
	if err != nil {
		return nil, err
	}
	h := &Hider{ws: ws, patterns: patterns, match: m}
	if h.anchored, err = masks.Expand(ws, anchoredPatterns(patterns), nil); err != nil {
		return nil, err
	}
	return h, nil
}

// hides reports whether the name rel is hidden.
func (h *Hider) Hides(rel string) bool {
	return h != nil && (h.match.Match(rel, false) != "" || h.anchored.Hides(rel))
}

// hidesFile reports whether the file rel is hidden, under this name or
// (a hard link) another, as the sandbox hides it from commands.
func (h *Hider) HidesFile(root *pathguard.Root, rel string) (bool, error) {
	if h == nil {
		return false, nil
	}
	if h.Hides(rel) {
		return true, nil
	}
	fi, err := root.Lstat(filepath.FromSlash(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // nothing there to read
	}
	if err != nil {
		// Fail closed: a name that cannot be looked at (a link swapped
		// onto its path, no permission) cannot be shown to be no hard
		// link to a denied file.
		return false, fmt.Errorf("check %s against the deny rules: %w", rel, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink < 2 {
		return false, nil
	}
	if h.full == nil {
		plan, err := masks.Expand(h.ws, h.patterns, nil)
		if err != nil {
			return false, err
		}
		h.full = &plan
	}
	return h.full.Hides(rel), nil
}

// denyMatchers keeps compiled deny patterns, by workspace and patterns:
// compiling reads no file (the patterns' text and the workspace's name
// make the matcher), so the same rules make the same matcher, and other
// rules (one added, removed or changed) are another key. Every call of a
// file tool compiles its job's rules; a job's rules rarely change.
var denyMatchers = struct {
	sync.Mutex
	m map[string]*masks.DenyMatcher
}{m: map[string]*masks.DenyMatcher{}}

// maxDenyMatchers bounds the matchers kept, dropped all at once when full.
const maxDenyMatchers = 256

// denyMatcher is masks.NewDenyMatcher(ws, patterns), compiled once.
func denyMatcher(ws string, patterns []string) (*masks.DenyMatcher, error) {
	// Each string prefixed with its length: no two lists share a key.
	var b strings.Builder
	for _, s := range append([]string{ws}, patterns...) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	key := b.String()
	denyMatchers.Lock()
	m, ok := denyMatchers.m[key]
	denyMatchers.Unlock()
	if ok {
		return m, nil
	}
	m, err := masks.NewDenyMatcher(ws, patterns)
	if err != nil {
		return nil, err
	}
	denyMatchers.Lock()
	if len(denyMatchers.m) >= maxDenyMatchers {
		denyMatchers.m = map[string]*masks.DenyMatcher{}
	}
	denyMatchers.m[key] = m
	denyMatchers.Unlock()
	return m, nil
}
