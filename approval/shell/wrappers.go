package shell

import (
	"strings"

	"github.com/custos-dev/custos/approval/programs"
)

// flock -c: a wrapper whose option carries a command, walked as code.

// flockScript judges flock FILE -c COMMAND (or -c COMMAND FILE), which
// runs COMMAND with sh -c: the script is walked as code, the lock file is
// written. It reports false for flock FILE PROGRAM ARGS, a wrapper
// (unwrap).
func (w *walker) flockScript(args []programs.Word, wr wrapping) bool {
	rest := args[1:]
	var script *programs.Word
	lock := -1
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case !a.Static:
			return false
		case strings.HasPrefix(a.Text, "--command="):
			script = &programs.Word{Text: strings.TrimPrefix(a.Text, "--command="), Static: true}
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
		w.Access(programs.AccessWrite, rest[lock], "flock lock file")
	}
	if !script.Static {
		w.a.undecidable("flock -c with a dynamic command")
		return true
	}
	w.parseNested(script.Text, w.cwd.clone())
	return true
}
