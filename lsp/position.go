package lsp

import (
	"net/url"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Position is a place in a file as the protocol counts: 0-based line,
// 0-based character offset in UTF-16 code units.
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is a span of a file.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Location is a range in a file, with the file's absolute path.
type Location struct {
	Path  string
	Range Range
}

// ToUTF16 converts a 1-based column counted in characters (runes), as the
// model counts on a line of Read's output, to the protocol's 0-based
// UTF-16 offset on that line. A column past the line's end is its end.
func ToUTF16(line string, column int) int {
	n := 0
	for _, r := range line {
		if column <= 1 {
			break
		}
		column--
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// FromUTF16 converts a 0-based UTF-16 offset on line to a 1-based column
// counted in characters; an offset past the end is the column after it.
func FromUTF16(line string, offset int) int {
	col := 1
	for _, r := range line {
		if offset <= 0 {
			break
		}
		if r >= 0x10000 {
			offset -= 2
		} else {
			offset--
		}
		col++
	}
	return col
}

// lineAt is line n (0-based) of text without its line ending, and false
// when text has no such line.
func lineAt(text string, n int) (string, bool) {
	for i := 0; i < n; i++ {
		j := strings.IndexByte(text, '\n')
		if j < 0 {
			return "", false
		}
		text = text[j+1:]
	}
	if j := strings.IndexByte(text, '\n'); j >= 0 {
		text = text[:j]
	}
	return strings.TrimSuffix(text, "\r"), true
}

// Convert turns a 1-based line and column in text into a protocol
// position; a line past the end is refused by the caller (false).
func Convert(text string, line, column int) (Position, bool) {
	l, ok := lineAt(text, line-1)
	if !ok || line < 1 {
		return Position{}, false
	}
	return Position{Line: line - 1, Character: ToUTF16(l, max(column, 1))}, true
}

// fileURI is the file: URI of an absolute path, escaped as servers expect.
func fileURI(path string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	return u.String()
}

// uriPath is the path a file: URI names, "" for any other URI (a server
// may answer with locations in virtual documents, which are no file to
// show).
func uriPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || !utf8.ValidString(u.Path) {
		return ""
	}
	return filepath.Clean(filepath.FromSlash(u.Path))
}
