package docstest

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, from this package's directory.
const root = "../.."

// page is one Markdown file of the documentation.
type page struct {
	path  string // relative to root: README.md, docs/x.md
	lines []string
}

// pages reads README.md and docs/*.md.
func pages(t *testing.T) []page {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var out []page
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		out = append(out, page{path: filepath.ToSlash(rel), lines: strings.Split(string(b), "\n")})
	}
	return out
}

// fence is a fenced code block: its info string and its lines.
type fence struct {
	lang  string
	line  int // 1-based line of the opening fence
	lines []string
}

// fences returns the page's fenced code blocks and, separately, its prose
// (every line outside a fence, fences blanked so line numbers hold).
func (p page) fences() ([]fence, []string) {
	var out []fence
	prose := make([]string, len(p.lines))
	var cur *fence
	for i, l := range p.lines {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			if cur == nil {
				cur = &fence{lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), line: i + 1}
			} else {
				out = append(out, *cur)
				cur = nil
			}
			continue
		}
		if cur != nil {
			cur.lines = append(cur.lines, l)
			continue
		}
		prose[i] = l
	}
	return out, prose
}

// slug is GitHub's anchor for a heading: lower case, punctuation other than
// '-' and '_' dropped, spaces as '-'.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_':
			b.WriteRune(r)
		case unicode.IsLetter(r), unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var headingRe = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

// anchors are the page's heading anchors, with GitHub's -1, -2 … for
// repeated headings.
func (p page) anchors() map[string]bool {
	_, prose := p.fences()
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range prose {
		m := headingRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

var linkRe = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)

// inlineCode is every `code span` of the prose, whitespace folded (a span
// may run over a line break), with the line it starts on.
type span struct {
	text string
	line int
}

func (p page) inlineCode() []span {
	_, prose := p.fences()
	var out []span
	open, start := false, 0
	var cur strings.Builder
	for i, l := range prose {
		for j := 0; j < len(l); j++ {
			if l[j] != '`' {
				if open {
					cur.WriteByte(l[j])
				}
				continue
			}
			if open {
				out = append(out, span{text: strings.Join(strings.Fields(cur.String()), " "), line: start})
				cur.Reset()
			} else {
				start = i + 1
			}
			open = !open
		}
		if open {
			cur.WriteByte(' ')
		}
		if l == "" && open { // a blank line ends a paragraph: no span crosses it
			open = false
			cur.Reset()
		}
	}
	return out
}

// Every relative link of README.md and docs/*.md reaches a file that
// exists and, with a #fragment, a heading of that page.
func TestLinksResolve(t *testing.T) {
	ps := pages(t)
	anchors := map[string]map[string]bool{}
	for _, p := range ps {
		anchors[p.path] = p.anchors()
	}
	checked := 0
	for _, p := range ps {
		_, prose := p.fences()
		for i, l := range prose {
			// Links inside code spans are not links.
			l = regexp.MustCompile("`[^`]*`").ReplaceAllString(l, "")
			for _, m := range linkRe.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, frag, _ := strings.Cut(target, "#")
				dest := p.path
				if file != "" {
					dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(p.path), file)))
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						t.Errorf("%s:%d: link %q: no file %s", p.path, i+1, target, dest)
						continue
					}
				}
				if frag == "" {
					continue
				}
				a, ok := anchors[dest]
				if !ok {
					t.Errorf("%s:%d: link %q: %s is not a checked Markdown page, so #%s cannot be checked", p.path, i+1, target, dest, frag)
					continue
				}
				if !a[frag] {
					t.Errorf("%s:%d: link %q: %s has no heading #%s (it has: %s)", p.path, i+1, target, dest, frag, strings.Join(keys(a), " "))
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d relative links found: is the link pattern still right?", checked)
	}
}

// Pages use headings, not bold sentences standing in for them, and the
// README stays an index.
func TestPagesUseHeadings(t *testing.T) {
	boldLead := regexp.MustCompile(`^\*\*[^*]+[.:]\*\*`)
	for _, p := range pages(t) {
		_, prose := p.fences()
		for i, l := range prose {
			if boldLead.MatchString(l) {
				t.Errorf("%s:%d: a bold sentence stands in for a heading: %.60s", p.path, i+1, l)
			}
		}
		if p.path == "README.md" && len(p.lines) > 200 {
			t.Errorf("README.md has %d lines; it is an index of at most 200: move the details to docs/", len(p.lines))
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
