package programs

import (
	"path"
	"strings"
)

// Commands whose arguments do not fit operandSpec (programs.go): their
// entries in the program table name these functions.

// chmodOperands: the mode may look like an option (chmod -w f), so the first
// word that is a mode, whatever its spelling, is skipped.
func chmodOperands(w Walker, _ *Program, rest []Word) {
	modeSeen := false
	for _, a := range rest {
		switch {
		case !modeSeen && a.Static && isChmodMode(a.Text):
			modeSeen = true
		case a.Static && strings.HasPrefix(a.Text, "--reference="):
			modeSeen = true
			w.Access(AccessRead, Word{Text: strings.TrimPrefix(a.Text, "--reference="), Static: true}, "chmod --reference")
		case a.Static && strings.HasPrefix(a.Text, "-") && a.Text != "-":
		default:
			w.Access(AccessWrite, a, "chmod operand")
		}
	}
}

func isChmodMode(s string) bool {
	if s == "" {
		return false
	}
	if strings.Trim(s, "01234567") == "" {
		return true
	}
	if strings.Trim(s, "ugoa+-=rwxXst,") != "" {
		return false
	}
	return strings.ContainsAny(s, "+-=")
}

func ddOperands(w Walker, _ *Program, rest []Word) {
	for _, a := range rest {
		switch {
		case !a.Static && strings.HasPrefix(a.Text, "of="):
			w.Access(AccessWrite, Word{Text: a.Text}, "dd of=")
		case !a.Static && strings.HasPrefix(a.Text, "if="):
			w.Access(AccessRead, Word{Text: a.Text}, "dd if=")
		case !a.Static:
			w.Mention(a, "dd operand")
		case strings.HasPrefix(a.Text, "if="):
			w.Access(AccessRead, Word{Text: a.Text[3:], Static: true}, "dd if=")
		case strings.HasPrefix(a.Text, "of="):
			if p := path.Clean(a.Text[3:]); !HarmlessRedirect(p) {
				w.Access(AccessWrite, Word{Text: a.Text[3:], Static: true}, "dd of=")
			}
		}
	}
}

// shellOperands: with -c the script is a string (analysed on its own);
// otherwise the first operand is a script file the shell reads, and the
// rest are its arguments.
func shellOperands(w Walker, _ *Program, rest []Word) {
	name := w.CommandName()
	for i, a := range rest {
		if !a.Static {
			w.Mention(a, "argument of "+name)
			continue
		}
		if strings.HasPrefix(a.Text, "-") || strings.HasPrefix(a.Text, "+") {
			if a.Text == "-o" || a.Text == "+o" || a.Text == "-O" || a.Text == "+O" {
				continue
			}
			if !strings.HasPrefix(a.Text, "--") && strings.ContainsAny(a.Text[1:], "cs") {
				return // -c STRING or -s: no script file
			}
			if a.Text == "--rcfile" || a.Text == "--init-file" {
				if i+1 < len(rest) {
					w.Access(AccessRead, rest[i+1], name+" "+a.Text)
				}
			}
			continue
		}
		w.Access(AccessRead, a, name+" script")
		for _, b := range rest[i+1:] {
			w.Mention(b, "argument of "+name)
		}
		return
	}
}
