package shell

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/custos-dev/custos/approval/programs"
)

// Where the walker meets the shell's state (shellstate.go): what a command
// finds in its environment is judged when it is recorded, and the builtins
// that change the state record it.

// envImmune are the builtins that run no program, so no variable the line
// exported changes what they do (cd follows CDPATH and ~ in cwd.go, read
// splits only the words it reads).
var envImmune = map[string]bool{
	"echo": true, "printf": true, "test": true, "[": true, "true": true, "false": true, ":": true,
	"pwd": true, "cd": true, "pushd": true, "popd": true, "dirs": true, "export": true, "declare": true,
	"typeset": true, "local": true, "readonly": true, "unset": true, "set": true, "shopt": true,
	"shift": true, "read": true, "mapfile": true, "readarray": true, "exit": true, "return": true,
	"let": true, "break": true, "continue": true, "wait": true, "type": true, "umask": true,
	"times": true, "getopts": true, "hash": true, "alias": true, "unalias": true, "trap": true,
	"kill": true, "ulimit": true, "jobs": true, "disown": true,
}

// immune reports a command that is one of envImmune run as the builtin:
// not through a wrapper that executes a program (env echo runs
// /usr/bin/echo), nor named by a path.
func immune(argv0 string, wr wrapping) bool {
	for _, n := range wr.names {
		if n != "command" && n != "builtin" {
			return false
		}
	}
	return envImmune[argv0]
}

// judgeEnv judges, for the command being recorded, the variables the line
// set that it finds in its environment, and what the line left unknown
// (a sourced file).
func (w *walker) judgeEnv(argv0 string, wr wrapping) {
	a := w.a
	if len(w.cmdEnv) == 0 && len(a.outer) == 0 && len(a.exported) == 0 && a.envUnknown == "" {
		return
	}
	if w.curCmd < 0 || w.curCmd >= len(a.out.Commands) || immune(argv0, wr) {
		return
	}
	name := a.out.Commands[w.curCmd].Name
	var seen []string
	visit := func(v envVar) {
		if slices.Contains(seen, v.name) {
			return // a value set closer to the command hides it
		}
		seen = append(seen, v.name)
		if !v.inert {
			w.envVerdict(name, v)
		}
	}
	for _, v := range w.cmdEnv {
		visit(v)
	}
	for i := len(a.outer) - 1; i >= 0; i-- {
		for _, v := range a.outer[i] {
			visit(v)
		}
	}
	for _, v := range a.exported {
		visit(v)
	}
	if a.envUnknown != "" {
		w.Find(programs.Finding{Program: name, Option: "environment", Words: []string{a.envUnknown},
			What: "set by " + a.envUnknown + " earlier in the line may change what " + name + " runs: custos cannot read it", Env: programs.EnvLine})
	}
}

// envVerdict records one variable that is not inert on the command name.
func (w *walker) envVerdict(name string, v envVar) {
	why := v.why
	switch {
	case why != "":
	case dangerous(v.name):
		why = "it makes programs run or load other code"
	default:
		why = "not a variable known to be inert"
	}
	if dangerous(v.name) {
		w.a.undecidable(fmt.Sprintf("%s set %s changes what %s runs: %s", v.name, v.where, name, why))
		return
	}
	c := &w.a.out.Commands[w.curCmd]
	for _, f := range c.Findings {
		if f.Option == v.name {
			return // the program's entry said what it does (PAGER for git)
		}
	}
	origin := programs.EnvLine
	if v.wrapper {
		origin = programs.EnvWrapper
	}
	w.Find(programs.Finding{Program: name, Option: v.name, Words: []string{v.word},
		What: fmt.Sprintf("set %s changes what %s runs: %s", v.where, name, why), Env: origin})
}

// commandEnv builds the environment a call's assignments give its command
// (X=v cmd).
func (w *walker) commandEnv(assigns []*syntax.Assign) []envVar {
	var env []envVar
	for _, as := range assigns {
		if as.Name != nil {
			env = append(env, w.envAssign(as, "on the command"))
		}
	}
	return env
}

// statementEnv records a statement of assignments alone (X=v; …).
func (w *walker) statementEnv(assigns []*syntax.Assign) {
	for _, as := range assigns {
		if as.Name != nil {
			w.setEnv(w.envAssign(as, "earlier in the line"), false)
		}
	}
}

// unsetPath is PATH removed from a command's environment: bash then looks
// for programs in the current directory (and env -i leaves a shell it
// starts a default PATH ending in ".").
func unsetPath(where, word string) envVar {
	return envVar{name: "PATH", where: where, word: word,
		why: "without PATH, bash looks for programs in the current directory"}
}

// wrapperEnv adds what env's words (before its command) do to the
// command's environment: NAME=value, -u NAME, -i (also in clusters: -iu
// PATH, -vuPATH).
func (w *walker) wrapperEnv(words []programs.Word) {
	unset := func(name, word string) {
		if name == "PATH" {
			w.cmdEnv = append(w.cmdEnv, unsetPath("on the command", word))
		}
	}
	for i := 0; i < len(words); i++ {
		r := words[i]
		s := r.Text
		switch {
		case !r.Static && strings.HasPrefix(s, "-"):
		case s == "-" || s == "--ignore-environment":
			unset("PATH", "env "+s)
		case s == "--unset" && i+1 < len(words):
			i++
			unset(words[i].Text, "env --unset "+words[i].Text)
		case strings.HasPrefix(s, "--unset="):
			unset(strings.TrimPrefix(s, "--unset="), "env "+s)
		case strings.HasPrefix(s, "--"):
		case strings.HasPrefix(s, "-"):
			flags := s
			if k := strings.IndexAny(s, "uCS"); k >= 0 {
				flags = s[:k] // the rest is that letter's value
			}
			if strings.Contains(flags, "i") {
				unset("PATH", "env "+s)
			}
			val, next, ok := programs.ClusterValue(s, "uCS", 'u')
			if next && i+1 < len(words) {
				i++
				val = words[i].Text
			}
			if ok {
				unset(val, "env -u "+val)
			}
		case strings.Contains(s, "="):
			w.cmdEnv = append(w.cmdEnv, w.wrapperAssign(r))
		}
	}
}

// wrapperAssign judges env's NAME=value word.
func (w *walker) wrapperAssign(r programs.Word) envVar {
	k, val, _ := strings.Cut(r.Text, "=")
	var v envVar
	switch {
	case r.Static:
		v = w.envValue(k, []string{val}, true, "on the command", r.Text)
	case k == "PATH" && r.Node != nil && len(r.Node.Parts) > 0:
		// The word's first part holds "PATH=": judge what follows it.
		v = envVar{name: k, where: "on the command", word: r.Text}
		parts := r.Node.Parts
		if lit, ok := parts[0].(*syntax.Lit); ok && strings.HasPrefix(lit.Value, "PATH=") {
			rest := append([]syntax.WordPart{&syntax.Lit{Value: strings.TrimPrefix(lit.Value, "PATH=")}}, parts[1:]...)
			v.inert, v.why = w.pathWord(rest)
		}
	default:
		v = w.envValue(k, nil, false, "on the command", r.Text)
	}
	v.wrapper = true
	return v
}

// parseNested walks a script a command of this line runs (bash -c, eval,
// watch, a heredoc fed to a shell): its commands find what the command
// itself was given.
func (w *walker) parseNested(src string, cwd cwdSet) cwdSet {
	outer := make([]envVar, len(w.cmdEnv))
	for i, v := range w.cmdEnv {
		v.where = "for the shell that runs it"
		outer[i] = v
	}
	w.a.outer = append(w.a.outer, outer)
	defer func() { w.a.outer = w.a.outer[:len(w.a.outer)-1] }()
	return w.a.parse(src, w.depth+1, cwd)
}

// declOptions reads the leading options of export, declare, typeset,
// local and readonly (their getopt stops at the first other word): whether
// the names are exported, and whether they are functions.
func declOptions(variant string, opts []string) (export, funcs bool) {
	export = variant == "export"
	for _, o := range opts {
		if strings.HasPrefix(o, "-") {
			export = export && !strings.Contains(o, "n") || strings.Contains(o, "x")
			funcs = funcs || strings.Contains(o, "f")
		}
	}
	return export, funcs
}

// declClauseEnv records what a declaration clause (export X=1, declare -x
// X, local X=v …) puts into the environment of later commands.
func (w *walker) declClauseEnv(c *syntax.DeclClause) {
	variant := "declare"
	if c.Variant != nil {
		variant = c.Variant.Value
	}
	var opts []string
	i := 0
	for ; i < len(c.Args); i++ {
		as := c.Args[i]
		if !as.Naked || as.Name != nil || as.Value == nil {
			break
		}
		vals, static := w.word(as.Value)
		if !static || len(vals) != 1 || !strings.HasPrefix(vals[0], "-") && !strings.HasPrefix(vals[0], "+") {
			break
		}
		opts = append(opts, vals[0])
	}
	export, funcs := declOptions(variant, opts)
	for _, as := range c.Args[i:] {
		switch {
		case as.Name != nil && as.Naked:
			w.declName(as.Name.Value, export, funcs)
		case as.Name != nil:
			w.setEnv(w.envAssign(as, "earlier in the line"), export)
		case as.Value != nil:
			vals, static := w.word(as.Value)
			w.declWord(programs.Word{Text: strings.Join(vals, " "), Static: static && len(vals) == 1}, export, funcs)
		}
	}
}

// declWordsEnv is declClauseEnv for a declaration the parser saw as a
// plain command ('export' X=1, command export X=1).
func (w *walker) declWordsEnv(variant string, rest []programs.Word) {
	var opts []string
	i := 0
	for ; i < len(rest) && rest[i].Static && (strings.HasPrefix(rest[i].Text, "-") || strings.HasPrefix(rest[i].Text, "+")); i++ {
		opts = append(opts, rest[i].Text)
	}
	export, funcs := declOptions(variant, opts)
	for _, r := range rest[i:] {
		w.declWord(r, export, funcs)
	}
}

// declWord records one word of a declaration: NAME=value, NAME, or a word
// built at run time (export "$x"), which may set any variable.
func (w *walker) declWord(r programs.Word, export, funcs bool) {
	switch {
	case !r.Static:
		w.setUnknownEnv("a declaration of a name built at run time (" + r.Text + ")")
	case strings.Contains(r.Text, "="):
		k, v, _ := strings.Cut(r.Text, "=")
		w.setEnv(w.envValue(strings.TrimSuffix(k, "+"), []string{v}, !strings.HasSuffix(k, "+"), "earlier in the line", r.Text), export)
	default:
		w.declName(r.Text, export, funcs)
	}
}

// declName records a name declared without a value: an exported function
// reaches every bash the line starts; an exported variable keeps the value
// the line gave it.
func (w *walker) declName(name string, export, funcs bool) {
	switch {
	case funcs && export:
		w.setEnv(envVar{name: "BASH_FUNC_" + name + "%%", where: "earlier in the line", word: "export -f " + name,
			why: "an exported function replaces a command of that name in every bash it starts"}, true)
	case export:
		w.exportName(name)
	}
}

// setUnknownEnv records that later commands' environment cannot be told.
func (w *walker) setUnknownEnv(why string) {
	if w.a.envUnknown == "" {
		w.a.envUnknown = why
		w.a.envGen++
	}
}

// stateBuiltin records what a builtin does to the shell's state: set -a
// exports every later assignment; unset PATH leaves bash looking in the
// current directory; alias, hash -p and enable change what a name runs;
// trap runs its action later; read, mapfile, printf -v and getopts assign.
func (w *walker) stateBuiltin(name string, rest []programs.Word) {
	switch name {
	case "set", "shopt":
		if setsAllexport(rest) {
			w.a.allexport = true
		}
	case "unset":
		for _, r := range rest {
			if r.Text == "PATH" || !r.Static {
				w.setEnv(unsetPath("earlier in the line", "unset "+r.Text), false)
			}
		}
	case "alias":
		for _, r := range rest {
			if !r.Static || strings.Contains(r.Text, "=") {
				w.a.undecidable("alias makes a name run another command")
				return
			}
		}
	case "hash":
		for _, r := range rest {
			if !r.Static || strings.HasPrefix(r.Text, "-") && strings.Contains(r.Text, "p") {
				w.a.undecidable("hash -p makes a name run another program")
				return
			}
		}
	case "enable":
		for _, r := range rest {
			if !r.Static || !strings.HasPrefix(r.Text, "-") || strings.ContainsAny(r.Text, "fdn") {
				w.a.undecidable("enable changes which names are builtins or loads one from a file")
				return
			}
		}
	case "trap":
		w.trap(rest)
	case "read", "mapfile", "readarray", "getopts", "printf":
		w.builtinAssigns(name, rest) // let's assignments are arithmetic (setIntVar)
	case "export", "declare", "typeset", "local", "readonly":
		w.declWordsEnv(name, rest)
	}
}

// setsAllexport reports set -a, set -o allexport (and shopt -o's
// spelling), or a shell started with -a.
func setsAllexport(rest []programs.Word) bool {
	for _, r := range rest {
		switch {
		case !r.Static:
		case r.Text == "allexport":
			return true
		case strings.HasPrefix(r.Text, "-") && !strings.HasPrefix(r.Text, "--") && strings.Contains(r.Text, "a"):
			return true
		case r.Text == "--":
			return false
		}
	}
	return false
}

// builtinAssigns records the variables read, mapfile, getopts and printf
// -v assign, with values not known here.
func (w *walker) builtinAssigns(name string, rest []programs.Word) {
	for i, r := range rest {
		switch {
		case !r.Static:
			if name != "printf" {
				w.setUnknownEnv(name + " assigns a variable whose name is built at run time (" + r.Text + ")")
			}
		case name == "printf":
			switch {
			case r.Text == "-v" && i+1 < len(rest) && !rest[i+1].Static:
				w.setUnknownEnv("printf -v assigns a variable whose name is built at run time (" + rest[i+1].Text + ")")
			case r.Text == "-v" && i+1 < len(rest):
				w.noteVar(rest[i+1].Text, nil, false)
			case strings.HasPrefix(r.Text, "-v") && i == 0:
				w.noteVar(r.Text[2:], nil, false)
			}
		case programs.IsAssignment(programs.Word{Text: r.Text + "=", Static: true}):
			w.noteVar(r.Text, nil, false)
		}
	}
}

// trap records an action bash runs later (at exit, on a signal, before
// every command): its commands are judged when the script's walk ends
// (walkTraps), against the state the whole script leaves.
func (w *walker) trap(rest []programs.Word) {
	i := 0
	for i < len(rest) && rest[i].Static && strings.HasPrefix(rest[i].Text, "-") && rest[i].Text != "-" {
		if rest[i].Text == "--" {
			i++
			break
		}
		i++
	}
	if len(rest)-i < 2 {
		return // trap SIGNAL, trap -p, trap -l: nothing runs
	}
	action := rest[i]
	switch {
	case !action.Static:
		w.a.undecidable("trap of a command built at run time")
	case action.Text != "" && action.Text != "-":
		w.traps = append(w.traps, action.Text)
	}
}

// walkTraps walks the actions trap set in this script as code that runs
// after it (or before any of its commands): from a directory not known,
// with the functions it declared and the state the whole script leaves.
func (w *walker) walkTraps() {
	for i := 0; i < len(w.traps) && i < maxFuncCalls; i++ {
		src := w.traps[i]
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
		if err != nil {
			w.a.undecidable("trap action does not parse: " + err.Error())
			continue
		}
		saved := w.src
		w.src, w.seen, w.cwd = src, nil, cwdSet{unknown: true}
		w.stmts(f.Stmts, 0)
		w.src = saved
	}
}

// argText joins the static words of a command for a reason.
func argText(words []programs.Word) string {
	parts := make([]string, len(words))
	for i, a := range words {
		parts[i] = quoteWord(a.Text)
	}
	return strings.Join(parts, " ")
}

// xargsInertPrograms treat the words xargs appends as text: they name no
// file and no program, and no option of theirs does anything an appended
// word could turn on.
var xargsInertPrograms = map[string]bool{"echo": true, "printf": true, "true": true, "false": true,
	"basename": true, "dirname": true}

// xargsRuns judges the command xargs runs with the words it reads at run
// time: harmless for a program of xargsInertPrograms (which a rule for
// xargs then covers, when xargs is the only wrapper), undecidable for any
// other (xargs cat reads files no one named, xargs sh -c runs them). opts
// are xargs' options: the line without those that change only how it
// splits and batches its input is the command's RawPlain, which rules
// match too (Bash(xargs echo:*) covers xargs -0 echo).
func (w *walker) xargsRuns(opts, words []programs.Word, outermost bool) {
	if outermost && len(w.a.out.Commands) > 0 {
		w.xargsPlain(&w.a.out.Commands[len(w.a.out.Commands)-1], opts)
	}
	if len(words) == 0 || !words[0].Static || !xargsInertPrograms[path.Base(words[0].Text)] || w.isForeign(words[0]) {
		w.a.undecidable("xargs appends arguments read at run time")
		return
	}
	if outermost && len(w.a.out.Commands) > 0 {
		w.a.out.Commands[len(w.a.out.Commands)-1].XargsInert = true
	}
}

// xargsPlain sets c.RawPlain when xargs (the outermost wrapper of c,
// with the options opts) has options that change only how it splits and
// batches its input.
func (w *walker) xargsPlain(c *SimpleCommand, opts []programs.Word) {
	if len(c.Wrappers) == 0 || c.Wrappers[0] != "xargs" || len(c.Argv) < 1+len(opts) {
		return
	}
	plain, dropped := programs.WrapperPlain("xargs", c.Argv[1:1+len(opts)])
	if !dropped {
		return
	}
	line := append(append([]string{c.Argv[0]}, plain...), c.Argv[1+len(opts):]...)
	c.RawPlain = normaliseWords(line).Text
}

// xargsEnv adds the variable --process-slot-var=NAME (or an
// abbreviation of it) sets in what xargs runs.
func (w *walker) xargsEnv(words []programs.Word) {
	names, via := programs.WrapperSetsVar("xargs", words)
	for i, name := range names {
		w.cmdEnv = append(w.cmdEnv, w.envValue(name, nil, false, "by xargs", via[i].Text))
	}
}
