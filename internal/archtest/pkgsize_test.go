package archtest

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxPackageLines is how many product lines (the lines of a directory's
// non-test .go files) one package may hold: past it a reader no longer
// finds their way about it, and it is split along the seams its files
// already name (as cli's commands went to cli/policylab, cli/changescmd …).
const maxPackageLines = 4000

// oversized are the packages over maxPackageLines when the limit was
// pinned, each with its count then as its ceiling: they may shrink, never
// grow. Each comes off this list once it is split (issue 42, item 7). None
// is left: workflows (6,463 lines) came off at 3,706, its client-facing API
// in workflows/jobapi, its pure parts in workflows/calltext, mcpargs,
// grants, tokens, quorum, details and prompts, and its waits, MCP tools,
// preview, compaction, rewind, metrics, worktrees, notices, grants and
// Bash lanes in workflows/parking, mcpcalls, preview, compaction,
// rewinding, observe, worktrees, notices, granting and lanes.
var oversized = map[string]int{}

// No package of the module holds more than maxPackageLines product lines,
// the oversized ones aside, which hold no more than their ceiling.
func TestPackagesStayUnderTheLimit(t *testing.T) {
	counts, err := productLines(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if counts["cli"] == 0 || counts["workflows"] == 0 {
		t.Fatalf("counted no product lines in cli or workflows: %v", counts)
	}
	for _, dir := range slices.Sorted(maps.Keys(counts)) {
		n, limit := counts[dir], maxPackageLines
		if c, ok := oversized[dir]; ok {
			limit = c
		}
		if n > limit {
			t.Errorf("%s has %d product lines, over its %d: split it along the seams its files name", dir, n, limit)
		}
	}
	for dir := range oversized {
		if counts[dir] <= maxPackageLines {
			t.Errorf("%s has %d product lines, no more than %d: take it off the oversized list", dir, counts[dir], maxPackageLines)
		}
	}
}

// productLines counts, per directory under root (slash-separated, relative
// to root), the lines of its .go files that are not tests; testdata,
// node_modules and hidden directories are no packages of the module.
func productLines(root string) (map[string]int, error) {
	counts := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		counts[filepath.ToSlash(rel)] += bytes.Count(data, []byte("\n"))
		return nil
	})
	return counts, err
}

// The count takes a package's non-test files, as wc -l counts them, and
// leaves out its tests, testdata and hidden directories.
func TestProductLinesCountsWhatShips(t *testing.T) {
	root := t.TempDir()
	for path, content := range map[string]string{
		"a/a.go":                "package a\n\nfunc A() {}\n",
		"a/b.go":                "package a\n",
		"a/a_test.go":           "package a\n\n\n\n",
		"a/sub/s.go":            "package sub\n\n",
		"a/testdata/x.go":       "package x\n\n\n",
		".hidden/h.go":          "package h\n",
		"a/README.md":           "# a\n\n",
		"b/only_test.go":        "package b\n",
		"b/node_modules/n/n.go": "package n\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := productLines(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a": 4, "a/sub": 2}
	if len(got) != len(want) || got["a"] != want["a"] || got["a/sub"] != want["a/sub"] {
		t.Errorf("counted %v, want %v", got, want)
	}
}
