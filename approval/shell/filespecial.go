package shell

import (
	"path"
	"strings"
)

// Commands whose arguments do not fit operandSpec (programs.go): their
// entries in the program table name these functions.

// chmodOperands: the mode may look like an option (chmod -w f), so the first
// word that is a mode, whatever its spelling, is skipped.
func chmodOperands(w *walker, _ *program, rest []argWord) {
	modeSeen := false
	for _, a := range rest {
		switch {
		case !modeSeen && a.static && isChmodMode(a.s):
			modeSeen = true
		case a.static && strings.HasPrefix(a.s, "--reference="):
			modeSeen = true
			w.access(AccessRead, argWord{s: strings.TrimPrefix(a.s, "--reference="), static: true}, "chmod --reference")
		case a.static && strings.HasPrefix(a.s, "-") && a.s != "-":
		default:
			w.access(AccessWrite, a, "chmod operand")
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

func ddOperands(w *walker, _ *program, rest []argWord) {
	for _, a := range rest {
		switch {
		case !a.static && strings.HasPrefix(a.s, "of="):
			w.access(AccessWrite, argWord{s: a.s}, "dd of=")
		case !a.static && strings.HasPrefix(a.s, "if="):
			w.access(AccessRead, argWord{s: a.s}, "dd if=")
		case !a.static:
			w.mention(a, "dd operand")
		case strings.HasPrefix(a.s, "if="):
			w.access(AccessRead, argWord{s: a.s[3:], static: true}, "dd if=")
		case strings.HasPrefix(a.s, "of="):
			if p := path.Clean(a.s[3:]); !harmlessRedirect(p) {
				w.access(AccessWrite, argWord{s: a.s[3:], static: true}, "dd of=")
			}
		}
	}
}

// shellOperands: with -c the script is a string (analysed on its own);
// otherwise the first operand is a script file the shell reads, and the
// rest are its arguments.
func shellOperands(w *walker, _ *program, rest []argWord) {
	name := w.curName()
	for i, a := range rest {
		if !a.static {
			w.mention(a, "argument of "+name)
			continue
		}
		if strings.HasPrefix(a.s, "-") || strings.HasPrefix(a.s, "+") {
			if a.s == "-o" || a.s == "+o" || a.s == "-O" || a.s == "+O" {
				continue
			}
			if !strings.HasPrefix(a.s, "--") && strings.ContainsAny(a.s[1:], "cs") {
				return // -c STRING or -s: no script file
			}
			if a.s == "--rcfile" || a.s == "--init-file" {
				if i+1 < len(rest) {
					w.access(AccessRead, rest[i+1], name+" "+a.s)
				}
			}
			continue
		}
		w.access(AccessRead, a, name+" script")
		for _, b := range rest[i+1:] {
			w.mention(b, "argument of "+name)
		}
		return
	}
}

// wrapperOperands records what a wrapper's own options read or write:
// time -o FILE, flock FILE, xargs -a FILE; the rest are mentions.
func (w *walker) wrapperOperands(name string, words []argWord) {
	for i := 0; i < len(words); i++ {
		a := words[i]
		switch {
		case name == "time" && a.static && a.s == "--output" && i+1 < len(words):
			i++
			w.access(AccessWrite, words[i], "time -o")
		case name == "time" && a.static && strings.HasPrefix(a.s, "--output="):
			w.access(AccessWrite, argWord{s: strings.TrimPrefix(a.s, "--output="), static: true}, "time -o")
		case name == "xargs" && a.static && a.s == "--arg-file" && i+1 < len(words):
			i++
			w.access(AccessRead, words[i], "xargs -a")
		case name == "xargs" && a.static && strings.HasPrefix(a.s, "--arg-file="):
			w.access(AccessRead, argWord{s: strings.TrimPrefix(a.s, "--arg-file="), static: true}, "xargs -a")
		case (name == "time" || name == "xargs") && a.static && strings.HasPrefix(a.s, "-") && !strings.HasPrefix(a.s, "--"):
			// A cluster: -vo out (time), -0a list (xargs).
			want, kind := byte('o'), AccessWrite
			if name == "xargs" {
				want, kind = 'a', AccessRead
			}
			val, next, ok := clusterValue(a.s, wrapperSpecs[name].valued, want)
			switch {
			case ok && next && i+1 < len(words):
				i++
				w.access(kind, words[i], name+" -"+string(want))
			case ok && !next:
				w.access(kind, argWord{s: val, static: true}, name+" -"+string(want))
			case next && i+1 < len(words):
				i++ // another option's value
			}
		case name == "flock" && a.static && !strings.HasPrefix(a.s, "-"):
			w.access(AccessWrite, a, "flock lock file")
			for _, b := range words[i+1:] {
				w.mention(b, "argument of flock")
			}
			return
		default:
			w.mention(a, "argument of "+name)
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
func (w *walker) flockScript(args []argWord, wr wrapping) bool {
	rest := args[1:]
	var script *argWord
	lock := -1
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case !a.static:
			return false
		case strings.HasPrefix(a.s, "--command="):
			script = &argWord{s: strings.TrimPrefix(a.s, "--command="), static: true}
		case a.s == "--command" || strings.HasPrefix(a.s, "-") && !strings.HasPrefix(a.s, "--") && strings.HasSuffix(a.s, "c"):
			if i+1 < len(rest) {
				script = &rest[i+1]
			}
			i++
		case a.s == "-w" || a.s == "-E" || a.s == "--timeout" || a.s == "--conflict-exit-code":
			i++
		case strings.HasPrefix(a.s, "-"):
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
		w.access(AccessWrite, rest[lock], "flock lock file")
	}
	if !script.static {
		w.a.undecidable("flock -c with a dynamic command")
		return true
	}
	w.parseNested(script.s, w.cwd.clone())
	return true
}
