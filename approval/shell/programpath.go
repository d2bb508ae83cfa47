package shell

import (
	"path"
	"strings"

	"github.com/custos-dev/custos/approval/programs"
)

// A command named by a path runs that file, not the program of that name a
// rule was written for: ./ls is whatever the workspace holds under that
// name, as much as a PATH that puts the workspace first. A
// path in a system directory (/usr/bin/git) is the program itself; any
// other is foreign: it is judged as an unknown program (its words are
// mentions, no wrapper or shell is looked through), and an allow rule
// covers it only when the rule names the same file (Bash(./gradlew:*)).

// programPath resolves a command word that names its program by a path:
// the absolute paths it may be from the directories the command may run
// in (nil when that is not known), and whether it is foreign.
func (w *walker) programPath(a programs.Word) (paths []string, foreign bool) {
	if !a.Static || !strings.Contains(a.Text, "/") {
		return nil, false // looked up in PATH, which shellstate.go judges
	}
	if strings.HasPrefix(a.Text, "/") {
		paths = []string{path.Clean(a.Text)}
	} else if !w.cwd.unknown {
		for _, d := range w.cwd.dirs {
			paths = append(paths, path.Join(d, a.Text))
		}
	}
	for _, p := range paths {
		if !w.a.systemDir(path.Dir(p)) {
			return paths, true
		}
	}
	return nil, len(paths) == 0
}

// ProgramFile is the file the first word of a command names by a path, in
// a directory other than a system one ("" for a name looked up in PATH):
// relative to the workspace, as the commands rules are written for run
// there. A rule naming such a file covers only commands that run it.
func ProgramFile(first string, env Env) string {
	if !strings.Contains(first, "/") {
		return ""
	}
	p := first
	if !strings.HasPrefix(p, "/") {
		p = path.Join(env.Workspace, p)
	}
	p = path.Clean(p)
	if (&analyzer{env: env}).systemDir(path.Dir(p)) {
		return ""
	}
	return p
}

// isForeign reports a command word that names a foreign file.
func (w *walker) isForeign(a programs.Word) bool {
	_, foreign := w.programPath(a)
	return foreign
}
