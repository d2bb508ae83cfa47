package activities

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/lsp"
	"github.com/custos-dev/custos/sandbox/pathguard"
)

// view is what of a server's answer the model may see: a location is
// shown only inside the workspace, through the path guard (no symlink out
// of it) and not hidden by a Read deny rule, as Read would show the file;
// the rest is counted in withheld. A language server reads the whole
// workspace, and more, so its answers must pass the same walls as Read.
type view struct {
	ws       string
	root     *pathguard.Root
	hide     *toolkit.Hider
	files    map[string]*shownFile // by absolute path
	withheld int
}

// shownFile is a file results are shown from: its workspace-relative name
// and text, or not shown at all.
type shownFile struct {
	ok   bool
	show string
	text string
}

// newView is the view of an answer about tgt, whose text the call read
// (and checked) already, hiding what h hides (the call's Read deny rules).
func newView(tgt *toolkit.Target, text string, h *toolkit.Hider) *view {
	v := &view{ws: tgt.WS, root: tgt.Root, hide: h, files: map[string]*shownFile{}}
	v.files[tgt.Abs] = &shownFile{ok: true, show: tgt.Show, text: text}
	return v
}

// file is the file at abs as results may show it.
func (v *view) file(abs string) *shownFile {
	if f, ok := v.files[abs]; ok {
		return f
	}
	f := &shownFile{}
	v.files[abs] = f
	rel, err := filepath.Rel(v.ws, abs)
	if abs == "" || err != nil || !filepath.IsLocal(rel) {
		return f
	}
	// The name as the server gave it, checked against the deny rules,
	// then opened with no link followed on the way (openat2 beneath the
	// workspace): when that works, the name is its own real name, all
	// the guard's walk below would find, and the information of the file
	// opened after the check serves the read. A link on the way (or no
	// such file) takes the guard's walk.
	name := filepath.ToSlash(rel)
	if hidden, err := v.hide.HidesFile(v.root, name); err != nil || hidden {
		return f
	}
	if fi, err := v.root.Stat(rel); err == nil {
		f.ok, f.show, f.text = true, name, textOf(v.root, rel, fi)
		return f
	}
	// The path guard, as for Read: a symlink inside the workspace that
	// leads out of it, or to a denied file, shows nothing. The workspace
	// is the call's, canonical and open already.
	real, err := pathguard.ResolveUnder(v.ws, rel, false)
	if err != nil {
		return f
	}
	realRel, err := filepath.Rel(v.ws, real)
	if err != nil || !filepath.IsLocal(realRel) {
		return f
	}
	for _, name := range []string{filepath.ToSlash(rel), filepath.ToSlash(realRel)} {
		if hidden, err := v.hide.HidesFile(v.root, name); err != nil || hidden {
			return f
		}
	}
	f.ok, f.show, f.text = true, filepath.ToSlash(realRel), readText(v.root, realRel)
	return f
}

// at renders a position in a shown file: path:line:column, 1-based, the
// column in characters, and the line's text when withLine.
func (f *shownFile) at(p lsp.Position, withLine bool) string {
	line := nthLine(f.text, p.Line)
	s := fmt.Sprintf("%s:%d:%d", f.show, p.Line+1, lsp.FromUTF16(line, p.Character))
	if withLine {
		s += ": " + toolkit.TruncateLine(strings.TrimSpace(line))
	}
	return s
}

// locations renders definition and references answers, one per line.
func (v *view) locations(locs []lsp.Location, none string) string {
	var b strings.Builder
	n := 0
	for _, l := range locs {
		f := v.file(l.Path)
		if !f.ok {
			v.withheld++
			continue
		}
		n++
		if n <= maxLSPResults {
			b.WriteString(f.at(l.Range.Start, true) + "\n")
		}
	}
	if n > maxLSPResults {
		fmt.Fprintf(&b, "[%d more not shown]\n", n-maxLSPResults)
	}
	if n == 0 {
		return none + "\n"
	}
	return b.String()
}

// hover renders a hover, which is shown only when the symbol's definition
// is a file the model may read (or there is none, a builtin): a hover
// quotes the definition's documentation.
func (v *view) hover(ctx context.Context, c *lsp.Client, path string, pos lsp.Position, where string) (string, error) {
	locs, err := c.Definition(ctx, path, pos)
	if err != nil {
		return "", err
	}
	for _, l := range locs {
		if !v.file(l.Path).ok {
			v.withheld++
			return "the hover at " + where + " was withheld: the symbol is defined in a file the tools may not read\n", nil
		}
	}
	h, err := c.Hover(ctx, path, pos)
	if err != nil {
		return "", err
	}
	if h == "" {
		return "no hover information at " + where + "\n", nil
	}
	return h + "\n", nil
}

// symbols renders a file's outline, or with line the symbols enclosing it.
func (v *view) symbols(syms []lsp.Symbol, line *int) string {
	var b strings.Builder
	n := 0
	for _, s := range syms {
		if line != nil && (*line-1 < s.Range.Start.Line || *line-1 > s.Range.End.Line) {
			continue
		}
		f := v.file(s.Path)
		if !f.ok {
			v.withheld++
			continue
		}
		if n++; n > maxLSPResults {
			continue
		}
		detail := ""
		if s.Detail != "" {
			detail = " " + s.Detail
		}
		fmt.Fprintf(&b, "%s%s %s%s  %s\n", strings.Repeat("  ", s.Depth), s.Kind, s.Name, detail, f.at(s.Name0, false))
	}
	if n > maxLSPResults {
		fmt.Fprintf(&b, "[%d more not shown]\n", n-maxLSPResults)
	}
	if n == 0 {
		return "no symbols found\n"
	}
	return b.String()
}

// diagnostics renders a file's problems in the order of their place.
func (v *view) diagnostics(show string, diags []lsp.Diagnostic, complete bool) string {
	slices.SortStableFunc(diags, func(a, b lsp.Diagnostic) int {
		if a.Range.Start.Line != b.Range.Start.Line {
			return a.Range.Start.Line - b.Range.Start.Line
		}
		return a.Range.Start.Character - b.Range.Start.Character
	})
	var b strings.Builder
	f := v.file(filepath.Join(v.ws, filepath.FromSlash(show)))
	for i, d := range diags {
		if i == maxLSPResults {
			fmt.Fprintf(&b, "[%d more not shown]\n", len(diags)-i)
			break
		}
		src := ""
		if d.Source != "" {
			src = " (" + d.Source + ")"
		}
		fmt.Fprintf(&b, "%s: %s: %s%s\n", f.at(d.Range.Start, false), d.SeverityName(), strings.TrimSpace(d.Message), src)
	}
	if len(diags) == 0 {
		b.WriteString("no problems found in " + show + "\n")
	}
	if !complete {
		b.WriteString("[the language server had not finished checking the file; this may be incomplete]\n")
	}
	return b.String()
}

// note says how many results were withheld, if any.
func (v *view) note() string {
	if v.withheld == 0 {
		return ""
	}
	return fmt.Sprintf("[%d result(s) withheld: outside the workspace or in files a deny rule hides]\n", v.withheld)
}
