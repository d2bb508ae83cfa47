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

	"github.com/gobwas/glob"

	"github.com/custos-dev/custos/activities/api"
)

// maxGlobResults caps Glob's answer; a model that needs more should narrow
// the pattern.
const maxGlobResults = 1000

//go:embed glob.md
var globDescription string

// globTool is Glob as the model sees it: glob.md describes it, and the
// schema names exactly the fields of globInput.
var globTool = toolDef{
	name:        api.GlobActivity,
	description: describe(globDescription),
	schema:      `{"type":"object","properties":{"pattern":{"type":"string","description":"Glob pattern to match file paths against"},"path":{"type":"string","description":"Directory to search in, relative to the workspace root (default: the root)"}},"required":["pattern"],"additionalProperties":false}`,
}

type globInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
}

// compileGlobs compiles a pattern and its globstar variants with '/' as the
// separator, so "*" stays within one directory and "**" crosses them.
func compileGlobs(pattern string) ([]glob.Glob, error) {
	var gs []glob.Glob
	for _, p := range globVariants(pattern) {
		g, err := glob.Compile(p, '/')
		if err != nil {
			return nil, err
		}
		gs = append(gs, g)
	}
	return gs, nil
}

func matchAny(gs []glob.Glob, s string) bool {
	for _, g := range gs {
		if g.Match(s) {
			return true
		}
	}
	return false
}

// Glob lists files matching a pattern, newest first.
func (t *Tools) Glob(ctx context.Context, req api.ToolRequest) (api.ToolResult, error) {
	var in globInput
	if err := decodeInput(req.Input, &in, "pattern"); err != nil {
		return errorResult("Glob: %v", err), nil
	}
	if in.Pattern == "" {
		return errorResult("Glob: pattern must not be empty"), nil
	}
	pattern := filepath.ToSlash(in.Pattern)
	if strings.HasPrefix(pattern, "/") || pattern == ".." || strings.HasPrefix(pattern, "../") || strings.Contains(pattern, "/../") {
		return errorResult("Glob: pattern %q must be relative to the search directory and must not contain \"..\"; use path to choose the directory", in.Pattern), nil
	}
	pattern = strings.TrimPrefix(pattern, "./")
	gs, err := compileGlobs(pattern)
	if err != nil {
		return errorResult("Glob: invalid pattern %q: %v", in.Pattern, err), nil
	}

	tgt, err := searchRoot(req.Workspace, in.Path)
	if err != nil {
		return errorResult("Glob: %v", err), nil
	}
	defer tgt.Close()
	fi, err := tgt.root.Stat(tgt.rel)
	if err == nil && !fi.IsDir() {
		return errorResult("Glob: path %s is not a directory", in.Path), nil
	}
	canonWS := tgt.ws
	hidden, err := newHider(canonWS, req.ReadDeny)
	if err != nil {
		return errorResult("Glob: %v", err), nil
	}

	var matches []walkEntry
	err = walkFiles(ctx, canonWS, tgt.rel, func(e walkEntry) error {
		if hide, err := hidden.hidesFile(tgt.root, e.rel); err != nil || hide {
			return err // Read-denied (or another name of one): not listed either
		}
		// Match relative to the search directory, report relative to the
		// workspace (what Read and Edit take).
		within := e.rel
		if tgt.show != "." {
			within = strings.TrimPrefix(e.rel, tgt.show+"/")
		}
		if matchAny(gs, within) {
			matches = append(matches, e)
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return api.ToolResult{}, ctx.Err()
		}
		if errors.Is(err, fs.ErrNotExist) {
			return errorResult("Glob: directory %s does not exist", tgt.show), nil
		}
		return errorResult("Glob: %v", err), nil
	}
	if len(matches) == 0 {
		return api.ToolResult{Output: "No files found"}, nil
	}
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
	text, truncated := capHead(b.String(), maxOutput(req))
	return api.ToolResult{Output: text, Truncated: truncated || n > maxGlobResults}, nil
}
