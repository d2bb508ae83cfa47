package activities

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
)

// maxGrepFileSize skips files larger than this: generated blobs and data
// dumps, rarely what a code search is after, and costly to scan.
const maxGrepFileSize = 10 << 20

// maxGrepContext bounds the context lines one match may pull in.
const maxGrepContext = 20

//go:embed grep.md
var grepDescription string

// grepTool is Grep as the model sees it: grep.md describes it, and the
// schema names exactly the fields of grepInput.
var grepTool = toolkit.ToolDef{
	Name:        api.GrepActivity,
	Description: toolkit.Describe(grepDescription),
	Schema:      api.GrepSchema,
}

type grepInput struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path,omitempty"`
	Glob       string `json:"glob,omitempty"`
	OutputMode string `json:"output_mode,omitempty"`
	IgnoreCase bool   `json:"-i,omitempty"`
	LineNums   *bool  `json:"-n,omitempty"`
	Context    int    `json:"context,omitempty"`
}

// Grep searches file contents with a Go (RE2) regular expression. Files are
// visited in lexical path order, so the same tree gives the same answer.
func (t *Tools) Grep(ctx context.Context, req api.ToolRequest) (api.ToolResult, error) {
	var in grepInput
	if err := toolkit.DecodeInput(req.Input, &in, "pattern"); err != nil {
		return toolkit.ErrorResult("Grep: %v", err), nil
	}
	q, err := in.query()
	if err != nil {
		return toolkit.ErrorResult("Grep: %v", err), nil
	}
	tgt, err := toolkit.SearchRoot(req.Workspace, in.Path)
	if err != nil {
		return toolkit.ErrorResult("Grep: %v", err), nil
	}
	defer tgt.Close()
	hidden, err := toolkit.NewHider(tgt.WS, req.ReadDeny)
	if err != nil {
		return toolkit.ErrorResult("Grep: %v", err), nil
	}
	start, err := tgt.Root.Stat(tgt.Rel)
	if errors.Is(err, fs.ErrNotExist) {
		return toolkit.ErrorResult("Grep: %s does not exist", tgt.Show), nil
	} else if err != nil {
		return toolkit.ErrorResult("Grep: %v", err), nil
	}
	s := &grepSearch{
		grepQuery: q,
		scope:     searchScope{tgt: tgt, hidden: hidden, filter: q.filter},
		out:       boundedOutput{max: toolkit.MaxOutput(req)},
	}
	if err := s.run(ctx, start); err != nil {
		if ctx.Err() != nil {
			return api.ToolResult{}, ctx.Err()
		}
		return toolkit.ErrorResult("Grep: %v", err), nil
	}
	return s.result(), nil
}

// grepQuery is what a Grep call looks for and how it answers.
type grepQuery struct {
	re       *regexp.Regexp
	mode     string // "content", "files_with_matches" or "count"
	lineNums bool
	context  int         // lines before and after each match, in content mode
	filter   *globFilter // nil: every file
}

// query checks the input and compiles its expression and glob.
func (in grepInput) query() (grepQuery, error) {
	if in.Pattern == "" {
		return grepQuery{}, errors.New("pattern must not be empty")
	}
	mode := in.OutputMode
	if mode == "" {
		mode = "files_with_matches"
	}
	switch mode {
	case "content", "files_with_matches", "count":
	default:
		return grepQuery{}, fmt.Errorf("output_mode must be \"content\", \"files_with_matches\" or \"count\", got %q", in.OutputMode)
	}
	if in.Context < 0 || in.Context > maxGrepContext {
		return grepQuery{}, fmt.Errorf("context must be between 0 and %d lines, got %d", maxGrepContext, in.Context)
	}
	expr := in.Pattern
	if in.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return grepQuery{}, fmt.Errorf("invalid regular expression (Go RE2 syntax; no lookaround or backreferences): %v", err)
	}
	q := grepQuery{re: re, mode: mode, lineNums: in.LineNums == nil || *in.LineNums, context: in.Context}
	if in.Glob != "" {
		// Without a '/', glob filters by base name (like ripgrep's --glob),
		// otherwise by the path relative to the search directory.
		byBase := !strings.Contains(filepath.ToSlash(in.Glob), "/")
		if q.filter, err = newGlobFilter(in.Glob, byBase); err != nil {
			return grepQuery{}, fmt.Errorf("invalid glob %q: %v", in.Glob, err)
		}
	}
	return q, nil
}

// grepSearch is a Grep call under way: the query, where it looks, and the
// answer so far.
type grepSearch struct {
	grepQuery
	scope   searchScope
	out     boundedOutput
	files   int // files with a match
	matches int // matching lines in them
}

// run searches the files under the search directory, or the one file the
// search starts from.
func (s *grepSearch) run(ctx context.Context, start fs.FileInfo) error {
	if !start.IsDir() {
		// A single file is searched even if it does not match glob: the
		// model named it explicitly.
		s.scope.filter = nil
		return s.searchFile(ctx, walkEntry{rel: s.scope.tgt.Show, size: start.Size()})
	}
	return walkFiles(ctx, s.scope.tgt, func(e walkEntry) error {
		return s.searchFile(ctx, e)
	})
}

// searchFile searches one file, if it is in scope and searchable text.
func (s *grepSearch) searchFile(ctx context.Context, e walkEntry) error {
	if e.size > maxGrepFileSize {
		return nil
	}
	if ok, err := s.scope.shows(e.rel); err != nil || !ok {
		return err // Read-denied (a hard link of a denied file too) or not selected; or the rules cannot be enforced
	}
	data, _, err := toolkit.ReadRegular(s.scope.tgt.Root, filepath.FromSlash(e.rel), maxGrepFileSize)
	if err != nil || toolkit.LooksBinary(data) {
		return nil // unreadable, special or binary: not searchable text
	}
	if n := s.grepFile(e.rel, data, s.out.emit); n > 0 {
		s.files++
		s.matches += n
	}
	return ctx.Err()
}

// result is Grep's answer: the output, with a summary in count mode unless
// the output was cut.
func (s *grepSearch) result() api.ToolResult {
	if s.files == 0 {
		return api.ToolResult{Output: "No matches found"}
	}
	text, truncated := s.out.text()
	if s.mode == "count" && !truncated {
		text += fmt.Sprintf("[%d matching lines in %d files]\n", s.matches, s.files)
	}
	return api.ToolResult{Output: text, Truncated: truncated}
}

// boundedOutput is an answer written piece by piece. It keeps pieces only
// while it holds at most max bytes, but counts them all, so the truncation
// marker can say how much there was.
type boundedOutput struct {
	max   int
	b     strings.Builder
	total int
}

func (o *boundedOutput) emit(s string) {
	o.total += len(s)
	if o.b.Len() <= o.max {
		o.b.WriteString(s)
	}
}

// text is the output; when there was more than max, the whole lines that
// fit together with the truncation marker, and true.
func (o *boundedOutput) text() (string, bool) {
	text := o.b.String()
	if o.total <= o.max {
		return text, false
	}
	marker := toolkit.TruncMarker(o.max, o.total)
	text = toolkit.CutUTF8(text, max(o.max-len(marker), 0)) // a budget smaller than the marker keeps no line
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[:i+1]
	} else {
		text = ""
	}
	return text + strings.TrimPrefix(toolkit.TruncMarker(len(text), o.total), "\n"), true
}

// grepFile searches one file and emits its part of the answer; it returns
// the number of matching lines.
func (q grepQuery) grepFile(rel string, data []byte, emit func(string)) int {
	lines := bytes.Split(data, []byte{'\n'})
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1] // the split after a final newline
	}
	var hits []int
	for i, l := range lines {
		if q.re.Match(l) {
			hits = append(hits, i)
			if q.mode == "files_with_matches" {
				break // one is enough to list the file
			}
		}
	}
	if len(hits) == 0 {
		return 0
	}
	switch q.mode {
	case "files_with_matches":
		emit(rel + "\n")
	case "count":
		emit(fmt.Sprintf("%s:%d\n", rel, len(hits)))
	case "content":
		q.emitContent(rel, lines, hits, emit)
	}
	return len(hits)
}

// emitContent emits the matching lines with their context in grep's
// format: "path:N:line" for matches, "path-N-line" for context, "--"
// between groups that are not adjacent.
func (q grepQuery) emitContent(rel string, lines [][]byte, hits []int, emit func(string)) {
	isHit := make(map[int]bool, len(hits))
	for _, h := range hits {
		isHit[h] = true
	}
	last := -1
	for _, h := range hits {
		from, to := h-q.context, h+q.context
		if from < 0 {
			from = 0
		}
		if to >= len(lines) {
			to = len(lines) - 1
		}
		if from <= last {
			from = last + 1
		} else if last >= 0 && q.context > 0 {
			emit("--\n")
		}
		for i := from; i <= to; i++ {
			sep := "-"
			if isHit[i] {
				sep = ":"
			}
			line := toolkit.TruncateLine(strings.TrimSuffix(string(lines[i]), "\r"))
			if q.lineNums {
				emit(fmt.Sprintf("%s%s%d%s%s\n", rel, sep, i+1, sep, line))
			} else {
				emit(fmt.Sprintf("%s%s%s\n", rel, sep, line))
			}
		}
		if to > last {
			last = to
		}
	}
}
