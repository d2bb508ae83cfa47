package activities

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/custos-dev/custos/activities/api"
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
var grepTool = toolDef{
	name:        api.GrepActivity,
	description: describe(grepDescription),
	schema:      `{"type":"object","properties":{"pattern":{"type":"string","description":"Regular expression (RE2) to search for"},"path":{"type":"string","description":"File or directory to search, relative to the workspace root (default: the root)"},"glob":{"type":"string","description":"Only search files matching this glob, e.g. \"*.go\""},"output_mode":{"type":"string","enum":["content","files_with_matches","count"],"description":"What to return (default files_with_matches)"},"-i":{"type":"boolean","description":"Case-insensitive search"},"-n":{"type":"boolean","description":"Show line numbers in content mode (default true)"},"context":{"type":"integer","minimum":0,"maximum":20,"description":"Lines of context before and after each match (content mode)"}},"required":["pattern"],"additionalProperties":false}`,
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
	if err := decodeInput(req.Input, &in, "pattern"); err != nil {
		return errorResult("Grep: %v", err), nil
	}
	if in.Pattern == "" {
		return errorResult("Grep: pattern must not be empty"), nil
	}
	mode := in.OutputMode
	if mode == "" {
		mode = "files_with_matches"
	}
	switch mode {
	case "content", "files_with_matches", "count":
	default:
		return errorResult("Grep: output_mode must be \"content\", \"files_with_matches\" or \"count\", got %q", in.OutputMode), nil
	}
	if in.Context < 0 || in.Context > maxGrepContext {
		return errorResult("Grep: context must be between 0 and %d lines, got %d", maxGrepContext, in.Context), nil
	}
	expr := in.Pattern
	if in.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return errorResult("Grep: invalid regular expression (Go RE2 syntax; no lookaround or backreferences): %v", err), nil
	}
	lineNums := in.LineNums == nil || *in.LineNums

	// glob filters file names: without a '/', by base name (like ripgrep's
	// --glob), otherwise by the path relative to the search directory.
	var globs []interface{ Match(string) bool }
	byBase := false
	if in.Glob != "" {
		g := filepath.ToSlash(in.Glob)
		byBase = !strings.Contains(g, "/")
		gs, err := compileGlobs(strings.TrimPrefix(g, "./"))
		if err != nil {
			return errorResult("Grep: invalid glob %q: %v", in.Glob, err), nil
		}
		for _, x := range gs {
			globs = append(globs, x)
		}
	}

	tgt, err := searchRoot(req.Workspace, in.Path)
	if err != nil {
		return errorResult("Grep: %v", err), nil
	}
	defer tgt.Close()
	canonWS := tgt.ws
	hidden, err := newHider(canonWS, req.ReadDeny)
	if err != nil {
		return errorResult("Grep: %v", err), nil
	}
	start, err := tgt.root.Stat(tgt.rel)
	if errors.Is(err, fs.ErrNotExist) {
		return errorResult("Grep: %s does not exist", tgt.show), nil
	} else if err != nil {
		return errorResult("Grep: %v", err), nil
	}

	// The output is built in full size-accounting but kept only up to the
	// budget, so the truncation marker can say how much there was.
	max := maxOutput(req)
	var out strings.Builder
	total := 0
	emit := func(s string) {
		total += len(s)
		if out.Len() <= max {
			out.WriteString(s)
		}
	}
	files, matchesTotal := 0, 0
	searchFile := func(e walkEntry) error {
		if e.size > maxGrepFileSize {
			return nil
		}
		if hide, err := hidden.hidesFile(tgt.root, e.rel); err != nil || hide {
			return err // Read-denied (a hard link of a denied file too); or the rules cannot be enforced
		}
		if len(globs) > 0 {
			name := e.rel
			if byBase {
				name = path.Base(e.rel)
			} else if tgt.show != "." {
				name = strings.TrimPrefix(e.rel, tgt.show+"/")
			}
			matched := false
			for _, g := range globs {
				if g.Match(name) {
					matched = true
					break
				}
			}
			if !matched {
				return nil
			}
		}
		data, _, err := readRegular(tgt.root, filepath.FromSlash(e.rel), maxGrepFileSize)
		if err != nil || looksBinary(data) {
			return nil // unreadable, special or binary: not searchable text
		}
		n := grepFile(e.rel, data, re, mode, lineNums, in.Context, emit)
		if n > 0 {
			files++
			matchesTotal += n
		}
		return ctx.Err()
	}

	if start.IsDir() {
		err = walkFiles(ctx, canonWS, tgt.rel, searchFile)
	} else {
		// A single file is searched even if it does not match glob: the
		// model named it explicitly.
		globs = nil
		err = searchFile(walkEntry{rel: tgt.show, size: start.Size()})
	}
	if err != nil {
		if ctx.Err() != nil {
			return api.ToolResult{}, ctx.Err()
		}
		return errorResult("Grep: %v", err), nil
	}
	if files == 0 {
		return api.ToolResult{Output: "No matches found"}, nil
	}
	text := out.String()
	truncated := false
	if total > max {
		// Keep whole lines that fit together with the marker.
		marker := truncMarker(max, total)
		text = cutUTF8(text, max-len(marker))
		if i := strings.LastIndexByte(text, '\n'); i >= 0 {
			text = text[:i+1]
		} else {
			text = ""
		}
		text += strings.TrimPrefix(truncMarker(len(text), total), "\n")
		truncated = true
	}
	if mode == "count" && !truncated {
		text += fmt.Sprintf("[%d matching lines in %d files]\n", matchesTotal, files)
	}
	return api.ToolResult{Output: text, Truncated: truncated}, nil
}

// grepFile searches one file and emits its part of the answer; it returns
// the number of matching lines.
func grepFile(rel string, data []byte, re *regexp.Regexp, mode string, lineNums bool, context int, emit func(string)) int {
	lines := bytes.Split(data, []byte{'\n'})
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1] // the split after a final newline
	}
	var hits []int
	for i, l := range lines {
		if re.Match(l) {
			hits = append(hits, i)
			if mode == "files_with_matches" {
				break // one is enough to list the file
			}
		}
	}
	if len(hits) == 0 {
		return 0
	}
	switch mode {
	case "files_with_matches":
		emit(rel + "\n")
	case "count":
		emit(fmt.Sprintf("%s:%d\n", rel, len(hits)))
	case "content":
		// grep's format: "path:N:line" for matches, "path-N-line" for
		// context, "--" between groups that are not adjacent.
		isHit := make(map[int]bool, len(hits))
		for _, h := range hits {
			isHit[h] = true
		}
		last := -1
		for _, h := range hits {
			from, to := h-context, h+context
			if from < 0 {
				from = 0
			}
			if to >= len(lines) {
				to = len(lines) - 1
			}
			if from <= last {
				from = last + 1
			} else if last >= 0 && context > 0 {
				emit("--\n")
			}
			for i := from; i <= to; i++ {
				sep := "-"
				if isHit[i] {
					sep = ":"
				}
				line := truncateLine(strings.TrimSuffix(string(lines[i]), "\r"))
				if lineNums {
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
	return len(hits)
}
