// Package display renders untrusted text (a model's commands and tool
// inputs, tool output, file content) for a person: whatever a terminal, a
// chat client or a browser would interpret, hide or reorder is shown as a
// visible escape, so that what a person reads is what runs.
//
// The escaping is one notation, used by every channel:
//
//   - ⟨ESC⟩, ⟨CR⟩, ⟨BEL⟩, ⟨NUL⟩ … for the C0 controls and ⟨DEL⟩, by their
//     ASCII names (⟨LF⟩ and ⟨TAB⟩ only where the text is shown on one line);
//   - ⟨U+202E⟩ for any other character that is not seen as itself: C1
//     controls (U+0080–U+009F, among them the one-byte CSI U+009B),
//     bidirectional overrides, embeddings, isolates and marks, zero-width
//     and other format characters (U+200B–U+200F, U+2060–U+2064, U+FEFF,
//     the soft hyphen U+00AD, tag characters U+E0000–U+E007F), variation
//     selectors (which can carry hidden data), blank fillers, spaces other
//     than U+0020, line and paragraph separators, private-use and
//     unassigned code points;
//   - ⟨U+0430⟩ also for a letter that passes for an ASCII one: fullwidth
//     forms and mathematical alphanumerics always, and Cyrillic, Greek,
//     Armenian and Cherokee letters in a word that also has ASCII letters
//     ("ex⟨U+0430⟩mple.com"; "привет" stays as it is);
//   - ⟨0xFF⟩ for a byte that is not valid UTF-8;
//   - ⟨U+27E8⟩ for the character ⟨ itself, so that in rendered text every ⟨
//     begins an escape and no text can pass for one;
//   - ⟨… 120 characters left out …⟩ and ⟨… 40 lines left out …⟩ where a long
//     text is shortened: its head and its tail are shown, never only the
//     head, so the end of a command cannot disappear.
//
// An escape sequence is therefore shown as its parts: ESC [ 2 K CR is
// "⟨ESC⟩[2K⟨CR⟩" and an OSC 8 hyperlink shows its target. Nothing is
// dropped: every character of the text is either shown as itself or as an
// escape, and the rendering can be read back unambiguously.
//
// Functions that render raw text (Escape, Line, Block, Input) escape ⟨;
// Safe and SafeLine are for text that is already rendered (a summary the
// workflow made with this package, perhaps by another release): they escape
// only what a screen would interpret and leave ⟨ alone, so applying them to
// rendered text changes nothing. Every channel passes text it is given as
// rendered through them, and raw text through the others.
//
// The package is pure: it runs in the workflow as well as in the channels.
package display

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// c0 names the C0 control characters.
var c0 = [32]string{"NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "TAB", "LF", "VT", "FF", "CR", "SO", "SI",
	"DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB", "ESC", "FS", "GS", "RS", "US"}

// mode says how one character is rendered.
type mode struct {
	oneLine bool // LF and TAB are escaped too
	raw     bool // the text is raw: ⟨ is escaped
}

// hidden reports whether r is not seen as itself on a screen.
func hidden(r rune) bool {
	switch {
	case r == ' ':
		return false
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case unicode.Is(unicode.Zs, r): // spaces that look like U+0020 and are not
		return true
	case r >= 0xfe00 && r <= 0xfe0f, r >= 0xe0100 && r <= 0xe01ef, r >= 0x180b && r <= 0x180f:
		return true // variation selectors (and the Mongolian vowel separator)
	case r == 0x034f, r == 0x115f, r == 0x1160, r == 0x3164, r == 0xffa0, r == 0x2800:
		return true // combining grapheme joiner, Hangul fillers, braille blank
	}
	// Not graphic: other controls, format characters (bidirectional
	// controls, zero-width characters, soft hyphen, tags), line and
	// paragraph separators, private use, surrogates, unassigned.
	return !unicode.IsGraphic(r) || unicode.Is(unicode.Co, r)
}

// lookAlike reports whether r is a letter that passes for an ASCII one:
// fullwidth forms and mathematical alphanumerics always; letters of the
// scripts most confused with Latin (Cyrillic а, Greek ο, Armenian օ,
// Cherokee Ꭺ) where they share a word with ASCII letters, as in
// "exаmple.com" or "ls -lа": a word wholly in one of those scripts is
// shown as itself.
func lookAlike(r rune, inLatinWord bool) bool {
	switch {
	case r < 0x80:
		return false
	case r >= 0xff01 && r <= 0xff5e, r >= 0x1d400 && r <= 0x1d7ff:
		return true
	}
	return inLatinWord && unicode.IsLetter(r) && unicode.In(r, unicode.Cyrillic, unicode.Greek, unicode.Armenian, unicode.Cherokee)
}

// inWord reports whether r continues a word as a person reads one in a
// command: letters, digits and what joins the parts of names, paths and
// domains.
func inWord(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || strings.ContainsRune("._-/@:~+", r)
}

// latinWords marks, by byte offset, the runes of s that lie in a word with
// an ASCII letter.
func latinWords(s string) map[int]bool {
	var marks map[int]bool
	for i := 0; i < len(s); {
		j, ascii, other := i, false, false
		for j < len(s) {
			r, n := utf8.DecodeRuneInString(s[j:])
			if !inWord(r) {
				break
			}
			if r < 0x80 && unicode.IsLetter(r) {
				ascii = true
			} else if r >= 0x80 {
				other = true
			}
			j += n
		}
		if ascii && other {
			if marks == nil {
				marks = map[int]bool{}
			}
			for k := i; k < j; {
				_, n := utf8.DecodeRuneInString(s[k:])
				marks[k] = true
				k += n
			}
		}
		if j == i {
			_, n := utf8.DecodeRuneInString(s[i:])
			j += n
		}
		i = j
	}
	return marks
}

// token is how the character at s[i] is shown, and its length in s;
// latin says it lies in a word with ASCII letters (latinWords).
func token(s string, i int, m mode, latin bool) (string, int) {
	r, size := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && size <= 1:
		return fmt.Sprintf("⟨0x%02X⟩", s[i]), 1
	case r == '\n' || r == '\t':
		if m.oneLine {
			return "⟨" + c0[r] + "⟩", size
		}
		return s[i : i+size], size
	case r < 0x20:
		return "⟨" + c0[r] + "⟩", size
	case r == 0x7f:
		return "⟨DEL⟩", size
	case r == '⟨':
		if m.raw {
			return "⟨U+27E8⟩", size
		}
		return s[i : i+size], size
	case hidden(r), lookAlike(r, latin):
		return fmt.Sprintf("⟨U+%04X⟩", r), size
	}
	return s[i : i+size], size
}

// tokens splits s into the shown form of each of its characters.
func tokens(s string, m mode) []string {
	out := make([]string, 0, len(s))
	latin := latinWords(s)
	for i := 0; i < len(s); {
		t, n := token(s, i, m, latin[i])
		out = append(out, t)
		i += n
	}
	return out
}

// render is s with every character in its shown form.
func render(s string, m mode) string {
	var b strings.Builder
	b.Grow(len(s))
	latin := latinWords(s)
	for i := 0; i < len(s); {
		t, n := token(s, i, m, latin[i])
		b.WriteString(t)
		i += n
	}
	return b.String()
}

// Escape renders raw text that may span lines: line feeds and tabs are kept,
// everything else a screen would interpret or not show is escaped.
func Escape(s string) string { return render(s, mode{raw: true}) }

// Line renders raw text on one line, line feeds and tabs escaped too. When
// it has more than max characters (max > 0), its head and its tail are
// shown around a count of the characters left out in the middle.
func Line(s string, max int) string {
	m := mode{oneLine: true, raw: true}
	if max <= 0 || len(s) <= max {
		return render(s, m)
	}
	return elide(tokens(s, m), max)
}

// elide joins toks, shortened to limit of them: two thirds from the head, the
// rest from the tail, with the count of what is left out between.
func elide(toks []string, limit int) string {
	if len(toks) <= limit {
		return strings.Join(toks, "")
	}
	head := max(1, limit*2/3)
	tail := max(1, limit-head) // the end is always shown
	left := len(toks) - head - tail
	return strings.Join(toks[:head], "") + fmt.Sprintf("⟨… %d %s left out …⟩", left, plural(left, "character")) +
		strings.Join(toks[len(toks)-tail:], "")
}

// Block renders raw text that may span lines, for a preview: each line
// escaped as by Escape (tabs kept) and shortened to maxLineChars characters
// as by Line, and, past maxLines lines, the head and the tail of the lines
// around a count of the lines left out. A limit ≤ 0 is no limit.
func Block(s string, maxLines, maxLineChars int) string {
	lines := strings.Split(s, "\n")
	m := mode{raw: true}
	one := func(l string) string {
		if maxLineChars <= 0 || len(l) <= maxLineChars {
			return render(l, m)
		}
		return elide(tokens(l, m), maxLineChars)
	}
	var out []string
	if maxLines > 0 && len(lines) > maxLines {
		// The count takes a line; the last line is always shown.
		head := max(1, (maxLines-1)*2/3)
		tail := max(1, maxLines-1-head)
		left := len(lines) - head - tail
		for _, l := range lines[:head] {
			out = append(out, one(l))
		}
		out = append(out, fmt.Sprintf("⟨… %d %s left out …⟩", left, plural(left, "line")))
		for _, l := range lines[len(lines)-tail:] {
			out = append(out, one(l))
		}
	} else {
		for _, l := range lines {
			out = append(out, one(l))
		}
	}
	return strings.Join(out, "\n")
}

// Safe makes text that is already rendered (by this package, or by an
// older release that did not escape everything) safe to show: it escapes
// what Escape escapes except ⟨, so Safe(Escape(s)) == Escape(s) and
// Safe(Block(…)) == Block(…). Line feeds and tabs are kept.
func Safe(s string) string { return render(s, mode{}) }

// SafeLine is Safe on one line: line feeds and tabs escaped too, so
// SafeLine(Line(s, n)) == Line(s, n).
func SafeLine(s string) string { return render(s, mode{oneLine: true}) }

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
