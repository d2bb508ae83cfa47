package activities

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/pathglob"
)

// maxGlobResults caps Glob's answer; a model that needs more should narrow
// the pattern.
const maxGlobResults = 1000

//go:embed glob.md
var globDescription string

// globTool is Glob as the model sees it: glob.md describes it, and the
// schema names exactly the fields of globInput.
var globTool = toolkit.ToolDef{
	Name:        api.GlobActivity,
	Description: toolkit.Describe(globDescription),
	Schema:      api.GlobSchema,
}

type globInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
}

// globFilter selects the files a search (Glob, Grep) reports by a glob:
// by the path relative to the search directory, or, byBase, by the base
// name alone. A nil *globFilter selects every file.
type globFilter struct {
	glob   pathglob.Glob
	byBase bool
}

// newGlobFilter compiles pattern, with either separator and without a
// leading "./", into a filter.
func newGlobFilter(pattern string, byBase bool) (*globFilter, error) {
	g, err := pathglob.Compile(strings.TrimPrefix(filepath.ToSlash(pattern), "./"))
	if err != nil {
		return nil, err
	}
	return &globFilter{glob: g, byBase: byBase}, nil
}

// matches reports whether the filter selects the file rel (slash-separated,
// relative to the workspace) found in the search directory dir (as
// toolkit.Target.show).
func (f *globFilter) matches(dir, rel string) bool {
	if f == nil {
		return true
	}
	name := rel
	if f.byBase {
		name = path.Base(rel)
	} else if dir != "." {
		name = strings.TrimPrefix(rel, dir+"/")
	}
	return f.glob.Match(name)
}

// searchScope is what a search (Glob, Grep) looks through: the files under
// its directory that the Read deny rules do not hide and the filter selects.
type searchScope struct {
	tgt    *toolkit.Target
	hidden *toolkit.Hider
	filter *globFilter
}

// shows reports whether the file rel is in the scope: not Read-denied (nor
// another name of a denied file) and selected by the filter. The error says
// the deny rules cannot be enforced.
func (s searchScope) shows(rel string) (bool, error) {
	if hide, err := s.hidden.HidesFile(s.tgt.Root, rel); err != nil || hide {
		return false, err
	}
	return s.filter.matches(s.tgt.Show, rel), nil
}

// Glob lists files matching a pattern, newest first.
func (t *Tools) Glob(ctx context.Context, req api.ToolRequest) (api.ToolResult, error) {
	var in globInput
	if err := toolkit.DecodeInput(req.Input, &in, "pattern"); err != nil {
		return toolkit.ErrorResult("Glob: %v", err), nil
	}
	filter, err := in.filter()
	if err != nil {
		return toolkit.ErrorResult("Glob: %v", err), nil
	}
	tgt, err := toolkit.SearchRoot(req.Workspace, in.Path)
	if err != nil {
		return toolkit.ErrorResult("Glob: %v", err), nil
	}
	defer tgt.Close()
	if fi, err := tgt.Root.Stat(tgt.Rel); err == nil && !fi.IsDir() {
		return toolkit.ErrorResult("Glob: path %s is not a directory", in.Path), nil
	}
	hidden, err := toolkit.NewHider(tgt.WS, req.ReadDeny)
	if err != nil {
		return toolkit.ErrorResult("Glob: %v", err), nil
	}
	matches, err := globMatches(ctx, searchScope{tgt: tgt, hidden: hidden, filter: filter})
	if err != nil {
		if ctx.Err() != nil {
			return api.ToolResult{}, ctx.Err()
		}
		if errors.Is(err, fs.ErrNotExist) {
			return toolkit.ErrorResult("Glob: directory %s does not exist", tgt.Show), nil
		}
		return toolkit.ErrorResult("Glob: %v", err), nil
	}
	if len(matches) == 0 {
		return api.ToolResult{Output: "No files found"}, nil
	}
	return globListing(matches, toolkit.MaxOutput(req)), nil
}

// filter checks the pattern, which is relative to the search directory and
// never leaves it (path chooses the directory), and compiles it.
func (in globInput) filter() (*globFilter, error) {
	if in.Pattern == "" {
		return nil, errors.New("pattern must not be empty")
	}
	pattern := filepath.ToSlash(in.Pattern)
	if strings.HasPrefix(pattern, "/") || pattern == ".." || strings.HasPrefix(pattern, "../") || strings.Contains(pattern, "/../") {
		return nil, fmt.Errorf("pattern %q must be relative to the search directory and must not contain \"..\"; use path to choose the directory", in.Pattern)
	}
	f, err := newGlobFilter(pattern, false)
	if err != nil {
		return nil, fmt.Errorf("invalid pattern %q: %v", in.Pattern, err)
	}
	return f, nil
}

// globMatches lists the files in scope. They are matched relative to the
// search directory and reported relative to the workspace (what Read and
// Edit take).
func globMatches(ctx context.Context, scope searchScope) ([]walkEntry, error) {
	var matches []walkEntry
	err := walkFiles(ctx, scope.tgt, func(e walkEntry) error {
		ok, err := scope.shows(e.rel)
		if ok {
			matches = append(matches, e)
		}
		return err
	})
	return matches, err
}

// globListing is Glob's answer: the matches newest first (by path among
// equals), at most maxGlobResults of them and max bytes.
func globListing(matches []walkEntry, max int) api.ToolResult {
	sort.Slice(matches, func(i, j int) bool {
		if !matches[i].mtime.Equal(matches[j].mtime) {
			return matches[i].mtime.After(matches[j].mtime)
		}
		return matches[i].rel < matches[j].rel
	})
	n := len(matches)
	if n > maxGlobResults {
		matches = matches[:maxGlobResults]
	}
	var b strings.Builder
	for _, m := range matches {
		b.WriteString(path.Clean(m.rel))
		b.WriteByte('\n')
	}
	if n > maxGlobResults {
		fmt.Fprintf(&b, "[%d of %d matches shown, newest first; use a more specific pattern or path]\n", maxGlobResults, n)
	}
	text, truncated := toolkit.CapHead(b.String(), max)
	return api.ToolResult{Output: text, Truncated: truncated || n > maxGlobResults}
}
