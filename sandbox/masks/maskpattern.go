package masks

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gobwas/glob"

	"github.com/custos-dev/custos/pathglob"
)

// Deny patterns: compiled once per expansion, matched against every entry
// of the walk.

// denyPattern is one compiled deny pattern.
type denyPattern struct {
	spec string
	kind Kind
	// all: the pattern covers the whole workspace.
	all bool
	// base: no "/": matches base names at any depth of the workspace.
	base glob.Glob
	// full matches the absolute path; dirForm, for "X/**", matches X.
	full, dirForm pathglob.Glob
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
func compileDeny(spec, ws string, kind Kind) (*denyPattern, error) {
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
		if !pathglob.HasMeta(s) {
			p.literal = filepath.Join(ws, pathglob.Unescape(s))
		}
		return p, nil
	}
	full := s
	if !abs {
		full = pathglob.Escape(ws) + "/" + s
	}
	g, err := pathglob.Compile(full)
	if err != nil {
		return bad("bad glob", err)
	}
	p.full = g
	if d, ok := strings.CutSuffix(full, "/**"); ok && d != "" {
		if d == pathglob.Escape(ws) {
			p.all, p.root = true, ws
			return p, nil
		}
		if p.dirForm, err = pathglob.Compile(d); err != nil {
			return bad("bad glob", err)
		}
		if !pathglob.HasMeta(d) {
			p.literal, p.literalDir = pathglob.Unescape(d), true
		}
	} else if !pathglob.HasMeta(full) {
		p.literal = pathglob.Unescape(full)
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
		if pathglob.HasMeta(s) {
			break
		}
		root = path.Join(root, pathglob.Unescape(s))
	}
	return root
}
