package approval

import "strings"

// Glob intersection: does some path match both a rule's pattern and a
// shell glob a command names (cat secre*/key against Read(secrets/**))? The
// shell expands the glob at run time, so custos can only ask whether it may
// expand to a protected path. Both patterns become token lists and a
// depth-first search over pairs of positions looks for a common string.
// Character classes count as any one character: an over-approximation, so
// the answer errs towards "may match" (a question, never an allow).

type gtokKind uint8

const (
	gLit       gtokKind = iota // one literal byte
	gOne                       // ?, [...]: one byte other than '/'
	gStar                      // *: any bytes other than '/'
	gDStar                     // **: any bytes
	gOneNoDot                  // ? or [...] starting a name in a shell glob: not '.'
	gStarNoDot                 // * starting a name in a shell glob: not starting with '.'
)

type gtok struct {
	kind gtokKind
	c    byte
}

// globSide says which language a pattern is in.
type globSide uint8

const (
	ruleGlob     globSide = iota // a gobwas glob of a rule: backslash escapes
	shellGlob                    // bash: a name's leading dot only matches a literal dot
	shellDotGlob                 // bash with dotglob (shopt -s dotglob, GLOBIGNORE set)
)

// tokenizeGlob splits a pattern into tokens.
func tokenizeGlob(p string, side globSide) []gtok {
	ruleSide := side == ruleGlob
	var out []gtok
	for i := 0; i < len(p); i++ {
		segStart := side == shellGlob && (i == 0 || p[i-1] == '/')
		switch c := p[i]; {
		case c == '\\' && ruleSide && i+1 < len(p):
			i++
			out = append(out, gtok{kind: gLit, c: p[i]})
		case c == '*':
			if i+1 < len(p) && p[i+1] == '*' {
				for i+1 < len(p) && p[i+1] == '*' {
					i++
				}
				out = append(out, gtok{kind: gDStar})
				continue
			}
			if segStart {
				out = append(out, gtok{kind: gStarNoDot})
				continue
			}
			out = append(out, gtok{kind: gStar})
		case c == '?':
			if segStart {
				out = append(out, gtok{kind: gOneNoDot})
				continue
			}
			out = append(out, gtok{kind: gOne})
		case c == '[':
			end := strings.IndexByte(p[i+1:], ']')
			if end < 0 {
				out = append(out, gtok{kind: gLit, c: c})
				continue
			}
			if end == 0 && i+2 < len(p) { // []…] : the first ] is literal
				if e2 := strings.IndexByte(p[i+2:], ']'); e2 >= 0 {
					end = e2 + 1
				}
			}
			i += end + 1
			if segStart {
				out = append(out, gtok{kind: gOneNoDot})
				continue
			}
			out = append(out, gtok{kind: gOne})
		default:
			out = append(out, gtok{kind: gLit, c: c})
		}
	}
	return out
}

// maxGlobStates bounds the search; past it the answer is "may match".
const maxGlobStates = 1 << 14

// globsIntersect reports whether some string matches both a (a rule) and b
// (a shell glob). bash's rule that * and ? never match a name's leading dot
// is honoured for b unless the command line turns dotglob on.
func globsIntersect(a, b []gtok) bool {
	type state struct {
		i, j    int
		started bool // b[j] is a gStarNoDot that has consumed a byte
	}
	seen := map[state]bool{}
	var visit func(s state) bool
	visit = func(s state) bool {
		if seen[s] {
			return false
		}
		if len(seen) > maxGlobStates {
			return true
		}
		seen[s] = true
		i, j := s.i, s.j
		if i == len(a) && j == len(b) {
			return true
		}
		// Empty matches of stars.
		if i < len(a) && (a[i].kind == gStar || a[i].kind == gDStar) && visit(state{i + 1, j, s.started}) {
			return true
		}
		if j < len(b) && isStar(b[j].kind) && visit(state{i, j + 1, false}) {
			return true
		}
		if i == len(a) || j == len(b) {
			return false
		}
		// One byte consumed by both sides; at least one of them moves on.
		ta, tb := a[i], b[j]
		ni, aMoves := i, false
		if !isStar(ta.kind) {
			ni, aMoves = i+1, true
		}
		nj, bMoves, started := j, false, true
		if !isStar(tb.kind) {
			nj, bMoves, started = j+1, true, false
		}
		if !aMoves && !bMoves {
			// Two stars eating the same byte only matter when that is
			// the first byte of a name-leading shell star.
			if tb.kind != gStarNoDot || s.started {
				return false
			}
		}
		if !compatible(ta, tb, s.started) {
			return false
		}
		return visit(state{ni, nj, started})
	}
	return visit(state{})
}

func isStar(k gtokKind) bool { return k == gStar || k == gDStar || k == gStarNoDot }

// compatible reports whether one byte can satisfy both tokens. started tells
// whether b's leading-dot restriction is already past.
func compatible(a, b gtok, started bool) bool {
	bNoDot := b.kind == gOneNoDot || (b.kind == gStarNoDot && !started)
	bSlash := b.kind == gDStar || b.kind == gLit
	aSlash := a.kind == gDStar || a.kind == gLit
	switch {
	case a.kind == gLit && b.kind == gLit:
		return a.c == b.c
	case a.kind == gLit:
		return (a.c != '/' || bSlash) && !(bNoDot && a.c == '.')
	case b.kind == gLit:
		return b.c != '/' || aSlash
	}
	return true // some byte such as 'a' satisfies both
}

// maxRuleAlternatives bounds brace expansion of a rule pattern.
const maxRuleAlternatives = 64

// expandRuleBraces expands gobwas {a,b} alternatives; a pattern it cannot
// expand is returned whole (its braces then count as literals).
func expandRuleBraces(p string) []string {
	open := -1
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' {
			i++
			continue
		}
		if p[i] == '{' {
			open = i
			break
		}
	}
	if open < 0 {
		return []string{p}
	}
	depth, close := 0, -1
	var commas []int
	for i := open; i < len(p) && close < 0; i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				close = i
			}
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		}
	}
	if close < 0 {
		return []string{p}
	}
	var out []string
	start := open + 1
	for _, c := range append(commas, close) {
		for _, tail := range expandRuleBraces(p[start:c] + p[close+1:]) {
			out = append(out, p[:open]+tail)
			if len(out) > maxRuleAlternatives {
				return []string{p}
			}
		}
		start = c + 1
	}
	return out
}
