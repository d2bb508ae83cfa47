package display

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every class of character a screen would interpret or hide, each with the
// exact text a person sees, on one line (Line) and in a block (Escape).
func TestEscapeClasses(t *testing.T) {
	cases := []struct {
		name, in, line, block string
	}{
		{"plain text is itself", "go test ./... && echo ok", "go test ./... && echo ok", ""},
		{"unicode letters and emoji are themselves", "café ünïcode 日本 😀 ≠ →", "café ünïcode 日本 😀 ≠ →", ""},
		{"ESC of a CSI sequence", "echo hi\x1b[2K\rrm -rf .", "echo hi⟨ESC⟩[2K⟨CR⟩rm -rf .", ""},
		{"colour codes", "\x1b[31mred\x1b[0m", "⟨ESC⟩[31mred⟨ESC⟩[0m", ""},
		{"OSC 8 hyperlink ended by BEL", "\x1b]8;;https://evil.example\atouch ok\x1b]8;;\a", "⟨ESC⟩]8;;https://evil.example⟨BEL⟩touch ok⟨ESC⟩]8;;⟨BEL⟩", ""},
		{"OSC ended by ST", "\x1b]0;title\x1b\\", "⟨ESC⟩]0;title⟨ESC⟩\\", ""},
		{"C1 CSI as a character", "a\u009b2Kb", "a⟨U+009B⟩2Kb", ""},
		{"C1 CSI as a raw byte", "a\x9b2Kb", "a⟨0x9B⟩2Kb", ""},
		{"other C0 controls", "\x00\x07\x08\x0b\x0c\x7f", "⟨NUL⟩⟨BEL⟩⟨BS⟩⟨VT⟩⟨FF⟩⟨DEL⟩", ""},
		{"carriage return alone", "safe\rrm -rf ~", "safe⟨CR⟩rm -rf ~", ""},
		{"CRLF", "a\r\nb", "a⟨CR⟩⟨LF⟩b", "a⟨CR⟩\nb"},
		{"line feed and tab", "a\tb\nc", "a⟨TAB⟩b⟨LF⟩c", "a\tb\nc"},
		{"bidi override RLO", "echo \u202e)dm.txt(", "echo ⟨U+202E⟩)dm.txt(", ""},
		{"bidi embeddings and pop", "\u202a\u202b\u202c\u202d", "⟨U+202A⟩⟨U+202B⟩⟨U+202C⟩⟨U+202D⟩", ""},
		{"bidi isolates", "\u2066a\u2067b\u2068c\u2069", "⟨U+2066⟩a⟨U+2067⟩b⟨U+2068⟩c⟨U+2069⟩", ""},
		{"bidi marks", "\u200e\u200f\u061c", "⟨U+200E⟩⟨U+200F⟩⟨U+061C⟩", ""},
		{"zero-width space, non-joiner, joiner", "r\u200bm\u200c-\u200drf", "r⟨U+200B⟩m⟨U+200C⟩-⟨U+200D⟩rf", ""},
		{"word joiner and invisible operators", "\u2060\u2061\u2062\u2063\u2064", "⟨U+2060⟩⟨U+2061⟩⟨U+2062⟩⟨U+2063⟩⟨U+2064⟩", ""},
		{"byte order mark", "\ufeffls", "⟨U+FEFF⟩ls", ""},
		{"soft hyphen", "rm\u00ad-rf", "rm⟨U+00AD⟩-rf", ""},
		{"tag characters", "ok\U000E0041\U000E007F", "ok⟨U+E0041⟩⟨U+E007F⟩", ""},
		{"variation selectors", "a\ufe0f\U000E0100", "a⟨U+FE0F⟩⟨U+E0100⟩", ""},
		{"spaces that are not spaces", "a\u00a0b\u2003c\u3000d", "a⟨U+00A0⟩b⟨U+2003⟩c⟨U+3000⟩d", ""},
		{"line and paragraph separators", "a\u2028b\u2029c", "a⟨U+2028⟩b⟨U+2029⟩c", ""},
		{"blank fillers", "\u3164\u115f\u2800\u034f", "⟨U+3164⟩⟨U+115F⟩⟨U+2800⟩⟨U+034F⟩", ""},
		{"Cyrillic a in a Latin domain", "curl https://ex\u0430mple.com/x", "curl https://ex⟨U+0430⟩mple.com/x", ""},
		{"Cyrillic letters in an option and a path", "ls -l\u0430 ~/.bashr\u0441", "ls -l⟨U+0430⟩ ~/.bashr⟨U+0441⟩", ""},
		{"Greek omicron in a program name", "g\u03bf test", "g⟨U+03BF⟩ test", ""},
		{"Armenian and Cherokee look-alikes", "\u0585k \u13aal", "⟨U+0585⟩k ⟨U+13AA⟩l", ""},
		{"fullwidth letters always", "\uff52\uff4d -rf", "⟨U+FF52⟩⟨U+FF4D⟩ -rf", ""},
		{"mathematical letters always", "\U0001d42b\U0001d426", "⟨U+1D42B⟩⟨U+1D426⟩", ""},
		{"a word wholly in another script is itself", "echo привет мир; echo καλημέρα", "echo привет мир; echo καλημέρα", ""},
		{"accented Latin stays", "naïve résumé.txt", "naïve résumé.txt", ""},
		{"private use and unassigned", "\ue000\U0010fffd\u0378", "⟨U+E000⟩⟨U+10FFFD⟩⟨U+0378⟩", ""},
		{"invalid UTF-8", "a\xffb\xc3", "a⟨0xFF⟩b⟨0xC3⟩", ""},
		{"the escape bracket itself", "⟨ESC⟩ is not ESC", "⟨U+27E8⟩ESC⟩ is not ESC", ""},
		{"a real U+FFFD is itself", "\ufffd", "\ufffd", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line(tc.in, 0); got != tc.line {
				t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
			}
			block := tc.block
			if block == "" {
				block = tc.line
			}
			if got := Escape(tc.in); got != block {
				t.Errorf("Escape(%q) = %q, want %q", tc.in, got, block)
			}
			if got := Block(tc.in, 0, 0); got != block {
				t.Errorf("Block(%q) = %q, want %q", tc.in, got, block)
			}
			// What is shown holds nothing a screen would interpret.
			for _, r := range Line(tc.in, 0) {
				if r != ' ' && hidden(r) {
					t.Errorf("Line(%q) still holds %U", tc.in, r)
				}
			}
		})
	}
}

// Safe leaves rendered text as it is and escapes what is still raw, but not
// the bracket: it is for text another renderer made.
func TestSafe(t *testing.T) {
	for _, s := range []string{"echo hi\x1b[2K\rrm", "a\u202eb\u200dc", "x\ty\nz", "⟨tricky⟩", "\xff", "ex\u0430mple.c\u043em \uff52"} {
		if got, want := Safe(Escape(s)), Escape(s); got != want {
			t.Errorf("Safe(Escape(%q)) = %q, want %q", s, got, want)
		}
		if got, want := SafeLine(Line(s, 10)), Line(s, 10); got != want {
			t.Errorf("SafeLine(Line(%q)) = %q, want %q", s, got, want)
		}
		if got, want := Safe(Block(s, 2, 5)), Block(s, 2, 5); got != want {
			t.Errorf("Safe(Block(%q)) = %q, want %q", s, got, want)
		}
	}
	if got, want := Safe("a\x1b[2Kb\u202e\n⟨ESC⟩"), "a⟨ESC⟩[2Kb⟨U+202E⟩\n⟨ESC⟩"; got != want {
		t.Errorf("Safe = %q, want %q", got, want)
	}
	if got, want := SafeLine("a\nb\tc\rd"), "a⟨LF⟩b⟨TAB⟩c⟨CR⟩d"; got != want {
		t.Errorf("SafeLine = %q, want %q", got, want)
	}
}

// A long text keeps its head and its tail, with the count of what is left
// out; its end never disappears.
func TestShortening(t *testing.T) {
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"short enough", Line("echo ok", 7), "echo ok"},
		{"head, count, tail", Line("echo aaaaaaaaaa; rm -rf .", 12), "echo aaa⟨… 13 characters left out …⟩rf ."},
		{"escapes count as one character and are never split", Line("\x1b\x1b\x1b\x1b\x1bX", 3), "⟨ESC⟩⟨ESC⟩⟨… 3 characters left out …⟩X"},
		{"one character left out", Line("abcd", 3), "ab⟨… 1 character left out …⟩d"},
		{"the tail survives the smallest limit", Line("abcdef", 1), "a⟨… 4 characters left out …⟩f"},
		{"lines: head, count, tail", Block("1\n2\n3\n4\n5\n6\n7\n8\n9\n10", 4, 0), "1\n2\n⟨… 7 lines left out …⟩\n10"},
		{"one line left out", Block("1\n2\n3\n4", 3, 0), "1\n⟨… 2 lines left out …⟩\n4"},
		{"the last line survives", Block("a\nb\nc\nrm -rf .", 1, 0), "a\n⟨… 2 lines left out …⟩\nrm -rf ."},
		{"a long line in a block", Block("short\n"+strings.Repeat("x", 20)+"END", 0, 9), "short\nxxxxxx⟨… 14 characters left out …⟩END"},
		{"escapes inside a shortened block", Block("a\rb\n2\n3\n4\x1b", 3, 0), "a⟨CR⟩b\n⟨… 2 lines left out …⟩\n4⟨ESC⟩"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	// The count is of the original characters, multi-byte ones included.
	s := strings.Repeat("é", 50)
	if got, want := Line(s, 30), strings.Repeat("é", 20)+"⟨… 20 characters left out …⟩"+strings.Repeat("é", 10); got != want {
		t.Errorf("Line(é×50, 30) = %q, want %q", got, want)
	}
}

func TestInput(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"one-line fields sorted", `{"file_path":"a.txt","content":"x","limit":3}`,
			"content: x\nfile_path: a.txt\nlimit: 3"},
		{"multi-line strings as blocks, last, tabs kept", `{"content":"a\n\tb\n","file_path":"a.txt"}`,
			"file_path: a.txt\ncontent:\n  │ a\n  │ \tb"},
		{"escapes in values and names", `{"command":"echo hi\u001b[2K\rrm -rf .","x\u202e":"\u200d"}`,
			"command: echo hi⟨ESC⟩[2K⟨CR⟩rm -rf .\nx⟨U+202E⟩: ⟨U+200D⟩"},
		{"escapes in a block", `{"content":"ok\n\u001b]8;;http://x\u0007link\u001b]8;;\u0007\n"}`,
			"content:\n  │ ok\n  │ ⟨ESC⟩]8;;http://x⟨BEL⟩link⟨ESC⟩]8;;⟨BEL⟩"},
		{"other values as JSON, escaped", `{"a":["<b>","\u202e"],"n":null}`,
			"a: [\"<b>\",\"⟨U+202E⟩\"]\nn: null"},
		{"not an object", `["x"]`, "[\n  \"x\"\n]"},
		{"not JSON", "nope\x1b", "nope⟨ESC⟩"},
		{"nothing is shortened", `{"command":"` + strings.Repeat("y", 5000) + `END"}`, "command: " + strings.Repeat("y", 5000) + "END"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Input(json.RawMessage(tc.in)); got != tc.want {
				t.Errorf("Input(%s) =\n%q\nwant\n%q", tc.in, got, tc.want)
			}
		})
	}
}

// Whatever the text, the rendering is valid UTF-8 with nothing hidden in it,
// and reads back to the text (the notation is unambiguous).
func FuzzLine(f *testing.F) {
	for _, s := range []string{"echo hi\x1b[2K\r", "\u202e\u200d", "⟨U+27E8⟩", "\xff\xfe", "a\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Line(s, 0)
		if !utf8.ValidString(got) {
			t.Fatalf("Line(%q) = %q is not UTF-8", s, got)
		}
		for _, r := range got {
			if r != ' ' && hidden(r) {
				t.Fatalf("Line(%q) = %q holds %U", s, got, r)
			}
		}
		if back := unescape(t, got); back != s {
			t.Fatalf("Line(%q) = %q reads back as %q", s, got, back)
		}
	})
}

// unescape reads a rendering back, failing on anything the notation does
// not allow.
func unescape(t *testing.T, s string) string {
	names := map[string]byte{"DEL": 0x7f}
	for i, n := range c0 {
		names[n] = byte(i)
	}
	var b strings.Builder
	for s != "" {
		i := strings.Index(s, "⟨")
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i+len("⟨"):]
		j := strings.Index(s, "⟩")
		if j < 0 {
			t.Fatalf("unclosed escape in %q", s)
		}
		esc := s[:j]
		s = s[j+len("⟩"):]
		var r rune
		var by byte
		switch {
		case names[esc] != 0 || esc == "NUL":
			b.WriteByte(names[esc])
		case strings.HasPrefix(esc, "U+"):
			if _, err := fmtSscanf(esc[2:], &r); err != nil {
				t.Fatalf("bad escape %q", esc)
			}
			b.WriteRune(r)
		case strings.HasPrefix(esc, "0x"):
			if _, err := fmtSscanfByte(esc[2:], &by); err != nil {
				t.Fatalf("bad escape %q", esc)
			}
			b.WriteByte(by)
		default:
			t.Fatalf("unknown escape %q", esc)
		}
	}
	return b.String()
}
