package shell

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/custos-dev/custos/approval/programs"
)

// FileAccess is one file a command line reads, writes or names.
type FileAccess struct {
	Kind programs.AccessKind
	// Paths are the absolute, clean paths the word may name: one per
	// directory the command may run in (a cd that may fail leaves two).
	// Nil when the word cannot be resolved statically (a variable, a
	// substitution, a cd to an unknown place).
	Paths []string
	// programs.Word is the word as the shell sees it after quote removal (its source
	// text when it is dynamic).
	Word string
	// Via says where the access comes from: "redirection", "tee operand",
	// "cp destination", "sed -i" …
	Via string
	// Glob is set when the word holds glob characters the shell may expand
	// to other names (quoting is not tracked, so '*' counts too: fail closed).
	Glob bool
	// Command is the index in Analysis.Commands of the command whose
	// operand this is; -1 for redirections and wrapper options.
	Command int
	// Dir is set for destinations that may be directories written into
	// (cp a out/): an Edit rule covering the directory's content allows them.
	Dir bool
	// Program and Option are the table entry and option that name the
	// file (git diff --output), for verdicts.
	Program, Option string
}

// Destination records a write to a path that may be a directory the
// command writes into.
func (w *walker) Destination(a programs.Word, via string) {
	n := len(w.a.out.Files)
	w.Access(programs.AccessWrite, a, via)
	for i := n; i < len(w.a.out.Files); i++ {
		w.a.out.Files[i].Dir = true
	}
}

// Access records one file Access of word a.
func (w *walker) Access(kind programs.AccessKind, a programs.Word, via string) {
	if a.Pipe || kind == 0 {
		return // a process substitution is a pipe, not a file
	}
	if a.Static && (a.Text == "-" || a.Text == "") && kind != programs.AccessConnect {
		return // stdin / stdout, or nothing
	}
	if w.inFindExec > 0 && a.Static && strings.Contains(a.Text, "{}") {
		a = programs.Word{Text: a.Text} // find -exec cat {} \;: the file is found at run time
	}
	if !a.Static && a.Node != nil && w.tracking() {
		// A dynamic word may still be static once tracked variables are
		// substituted: judge each value it may take.
		if vals, static := w.wordVars(a.Node); static {
			for _, v := range vals {
				w.Access(kind, programs.Word{Text: v, Static: true}, via)
			}
			return
		}
	}
	fa := FileAccess{Kind: kind, Word: a.Text, Via: via, Glob: a.Static && hasShellGlob(a.Text), Command: w.curCmd}
	if kind != programs.AccessConnect {
		fa.Paths = w.cwd.resolve(a)
	}
	w.a.out.Files = append(w.a.out.Files, fa)
}

// hasShellGlob reports unquoted-looking glob characters in a word.
func hasShellGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// Mention records a word of a command whose use of it is unknown, and the
// parts of it that may be paths: the value of --opt=VALUE or KEY=VALUE and
// the file of @FILE (curl -d @.env and friends).
func (w *walker) Mention(a programs.Word, via string) {
	if !a.Static || a.Pipe {
		// A dynamic argument of an unknown command may be anything; it is
		// judged as a mention that cannot be resolved.
		w.Access(programs.AccessMention, a, via)
		return
	}
	w.Access(programs.AccessMention, a, via)
	s := a.Text
	if _, v, ok := strings.Cut(s, "="); ok && v != "" {
		w.Access(programs.AccessMention, programs.Word{Text: strings.TrimPrefix(v, "@"), Static: true}, via)
	}
	if rest, ok := strings.CutPrefix(s, "@"); ok && rest != "" {
		w.Access(programs.AccessMention, programs.Word{Text: rest, Static: true}, via)
	}
}

// redirectAccess records the file a redirection reads or writes, or the
// connection it opens. fd duplications and the harmless devices name no file.
func (w *walker) redirectAccess(kind programs.AccessKind, word *syntax.Word, vals []string, static, pipe bool) {
	if pipe {
		return
	}
	if !static && word != nil && w.tracking() {
		if vs, st := w.wordVars(word); st {
			vals, static = vs, true
		}
	}
	for _, v := range vals {
		clean := v
		if static && v != "" {
			clean = path.Clean(v)
		}
		if strings.HasPrefix(clean, "/dev/tcp/") || strings.HasPrefix(clean, "/dev/udp/") {
			w.Access(programs.AccessConnect, programs.Word{Text: clean, Static: static}, "redirection")
			continue
		}
		if static && programs.HarmlessRedirect(clean) {
			continue
		}
		w.Access(kind, programs.Word{Text: v, Static: static}, "redirection")
	}
}
