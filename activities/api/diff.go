package api

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Bounds of what a call's result event keeps of its output and change: the
// journal lives in the workflow's memory and answers queries, so the
// whole output stays in history and the transcript, and an event keeps an
// excerpt.
const (
	// ExcerptKeep is how much of an output's start, and of its end, an
	// excerpt keeps.
	ExcerptKeep = 2 << 10
	// MaxDiffText bounds each side of a FileDiff; a Write's previous
	// content is kept when the file held at most this much.
	MaxDiffText = 8 << 10
)

// FileDiff is a Write's or Edit's change as an editor shows it: the file,
// the text before (nil: the file was new, or its old content is not known
// — see OldKnown) and after. For an Edit the texts are the replaced
// region, not the whole file. Cut says what was left out.
type FileDiff struct {
	Path     string  `json:"path"`
	OldText  *string `json:"oldText,omitempty"`
	NewText  string  `json:"newText"`
	OldKnown bool    `json:"oldKnown"`
	Cut      string  `json:"cut,omitempty"`
}

// Excerpt is s when it is at most 2×keep bytes, else its first and last
// keep bytes (cut at UTF-8 boundaries) with a line between them saying how
// many bytes were cut.
func Excerpt(s string, keep int) string {
	if len(s) <= 2*keep {
		return s
	}
	head := wholeRunes(s[:keep])
	tail := s[len(s)-keep:]
	for i := 0; i < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	cut := len(s) - len(head) - len(tail)
	return fmt.Sprintf("%s\n[… %d bytes cut: the first %d and last %d bytes of %d are shown …]\n%s", head, cut, len(head), len(tail), len(s), tail)
}

// Bounded is s when it is at most limit bytes, else its first limit bytes
// (cut at a UTF-8 boundary) and true.
func Bounded(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	return wholeRunes(s[:limit]), true
}

// wholeRunes is s without a rune cut at its end.
func wholeRunes(s string) string {
	for i := 0; i < utf8.UTFMax-1 && len(s) > 0; i++ {
		if r, n := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || n > 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// ChangeOf is a Write's or Edit's change from its input (and, for a
// Write, the old content its result carries), each side bounded.
func ChangeOf(tool string, input json.RawMessage, res ToolResult) *FileDiff {
	var in struct {
		FilePath  string `json:"file_path"`
		Content   string `json:"content"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
	}
	if json.Unmarshal(input, &in) != nil || in.FilePath == "" {
		return nil
	}
	d := &FileDiff{Path: in.FilePath}
	var oldText, newText string
	switch tool {
	case WriteActivity:
		newText = in.Content
		switch {
		case res.Previous != nil:
			oldText, d.OldKnown = *res.Previous, true
		case !res.Existed:
			d.OldKnown = true // a new file
		default:
			d.Cut = "the old content is not shown (larger than the diff's bound)"
		}
	case EditActivity:
		oldText, newText, d.OldKnown = in.OldString, in.NewString, true
	default:
		return nil
	}
	var oldCut, newCut bool
	if d.OldKnown && (oldText != "" || tool == EditActivity) {
		oldText, oldCut = Bounded(oldText, MaxDiffText)
		d.OldText = &oldText
	}
	d.NewText, newCut = Bounded(newText, MaxDiffText)
	if oldCut || newCut {
		d.Cut = "each side is cut at its first 8 KiB"
	}
	return d
}
