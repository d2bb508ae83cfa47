package shell

import (
	"path"
	"strings"
)

// Commands whose arguments do not fit operandSpec (programs.go): their
// entries in the program table name these functions.

// chmodOperands: the mode may look like an option (chmod -w f), so the first
// word that is a mode, whatever its spelling, is skipped.
func chmodOperands(w *walker, _ *program, rest []Word) {
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

func ddOperands(w *walker, _ *program, rest []Word) {
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
			if p := path.Clean(a.Text[3:]); !harmlessRedirect(p) {
				w.Access(AccessWrite, Word{Text: a.Text[3:], Static: true}, "dd of=")
			}
		}
	}
}

// shellOperands: with -c the script is a string (analysed on its own);
// otherwise the first operand is a script file the shell reads, and the
// rest are its arguments.
func shellOperands(w *walker, _ *program, rest []Word) {
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

// wrapperOperands records what a wrapper's own options read or write:
// time -o FILE, flock FILE, xargs -a FILE; the rest are mentions.
func (w *walker) wrapperOperands(name string, words []Word) {
	for i := 0; i < len(words); i++ {
		a := words[i]
		switch {
		case name == "time" && a.Static && a.Text == "--output" && i+1 < len(words):
			i++
			w.Access(AccessWrite, words[i], "time -o")
		case name == "time" && a.Static && strings.HasPrefix(a.Text, "--output="):
			w.Access(AccessWrite, Word{Text: strings.TrimPrefix(a.Text, "--output="), Static: true}, "time -o")
		case name == "xargs" && a.Static && a.Text == "--arg-file" && i+1 < len(words):
			i++
			w.Access(AccessRead, words[i], "xargs -a")
		case name == "xargs" && a.Static && strings.HasPrefix(a.Text, "--arg-file="):
			w.Access(AccessRead, Word{Text: strings.TrimPrefix(a.Text, "--arg-file="), Static: true}, "xargs -a")
		case (name == "time" || name == "xargs") && a.Static && strings.HasPrefix(a.Text, "-") && !strings.HasPrefix(a.Text, "--"):
			// A cluster: -vo out (time), -0a list (xargs).
			want, kind := byte('o'), AccessWrite
			if name == "xargs" {
				want, kind = 'a', AccessRead
			}
			val, next, ok := clusterValue(a.Text, wrapperSpecs[name].valued, want)
			switch {
			case ok && next && i+1 < len(words):
				i++
				w.Access(kind, words[i], name+" -"+string(want))
			case ok && !next:
				w.Access(kind, Word{Text: val, Static: true}, name+" -"+string(want))
			case next && i+1 < len(words):
				i++ // another option's value
			}
		case name == "flock" && a.Static && !strings.HasPrefix(a.Text, "-"):
			w.Access(AccessWrite, a, "flock lock file")
			for _, b := range words[i+1:] {
				w.Mention(b, "argument of flock")
			}
			return
		default:
			w.Mention(a, "argument of "+name)
		}
	}
}

// clusterValue reads a cluster of short options (-0a) whose letters in
// valued take a value: the value of the letter want (attached, or the
// next word: next), whether want is in the cluster, and next also when
// another letter takes the next word.
func clusterValue(s, valued string, want byte) (val string, next, ok bool) {
	for j := 1; j < len(s); j++ {
		if strings.IndexByte(valued, s[j]) < 0 {
			continue
		}
		rest := s[j+1:]
		return rest, rest == "", s[j] == want
	}
	return "", false, false
}

// flockScript judges flock FILE -c COMMAND (or -c COMMAND FILE), which
// runs COMMAND with sh -c: the script is walked as code, the lock file is
// written. It reports false for flock FILE PROGRAM ARGS, a wrapper
// (unwrap).
func (w *walker) flockScript(args []Word, wr wrapping) bool {
	rest := args[1:]
	var script *Word
	lock := -1
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case !a.Static:
			return false
		case strings.HasPrefix(a.Text, "--command="):
			script = &Word{Text: strings.TrimPrefix(a.Text, "--command="), Static: true}
		case a.Text == "--command" || strings.HasPrefix(a.Text, "-") && !strings.HasPrefix(a.Text, "--") && strings.HasSuffix(a.Text, "c"):
			if i+1 < len(rest) {
				script = &rest[i+1]
			}
			i++
		case a.Text == "-w" || a.Text == "-E" || a.Text == "--timeout" || a.Text == "--conflict-exit-code":
			i++
		case strings.HasPrefix(a.Text, "-"):
		case lock < 0:
			lock = i
		case script == nil:
			return false // flock FILE PROGRAM ARGS
		}
	}
	if script == nil {
		return false
	}
	w.emit(args, wr)
	if lock >= 0 {
		w.Access(AccessWrite, rest[lock], "flock lock file")
	}
	if !script.Static {
		w.a.undecidable("flock -c with a dynamic command")
		return true
	}
	w.parseNested(script.Text, w.cwd.clone())
	return true
}
