package shell

import (
	"path"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"

	"github.com/custos-dev/custos/approval/programs"
	"github.com/custos-dev/custos/pathglob"
)

// Limits that keep the analysis bounded on hostile input. Anything past them is
// undecidable (and so never allowed by a rule).
const (
	maxShellDepth   = 6   // nested bash -c / eval / heredoc-to-shell re-parses
	maxNodeDepth    = 200 // AST nesting (subshells in substitutions in ...)
	maxBraceExpand  = 64  // words one brace expression may expand to
	maxCommandBytes = 64 << 10
)

// SimpleCommand is one simple command found in a shell command line, after
// quote removal, wrapper stripping and normalisation.
type SimpleCommand struct {
	// Name is the basename of argv[0] after wrappers (env, sudo, timeout …)
	// were looked through.
	Name string
	// Args are the arguments after Name, quotes removed, paths cleaned, ~ and
	// $HOME expanded. A dynamic word (a variable, a substitution) is kept as
	// its source text.
	Args []string
	// Flags is the sorted set of flags for commands in the alias table
	// (rm, chmod, cp …), normalised: "-rf", "-r -f", "--recursive --force"
	// all become ["f", "r"]. Nil for other commands.
	Flags []string
	// Positionals are the non-flag arguments of alias-table commands, or all
	// Args for other commands.
	Positionals []string
	// Wrappers are the basenames of the wrapper commands looked through,
	// outermost first (e.g. ["sudo", "env"]).
	Wrappers []string
	// Text is the normalised command line rules match: Name, then (for
	// alias-table commands) the sorted flags, then the positionals.
	Text string
	// Raw is the normalised command line including the wrappers.
	Raw string
	// RawPlain is Raw without the options of xargs that change only how
	// it splits and batches its input (xargs -0 -n1 echo is xargs echo),
	// or "" when it has none.
	RawPlain string
	// Argv is the full argument vector including wrappers, quotes removed.
	Argv []string
	// Findings are what the program table found in the command that an
	// allow rule covers only when it names them (approval/programs): an option
	// that runs a program, one the table does not know, a script that
	// cannot be read.
	Findings []programs.Finding
	// Canonical is Text without the program's global options (git -C .
	// push is git push), or "" when it has none.
	Canonical string
	// Unjudged names what the command runs that the program table has no
	// entry for (make, npm test, python3 x.py), or "":
	// a rule for it covers everything that may do.
	Unjudged string
	// XargsInert: xargs runs a program that treats the words it appends
	// as text (echo), so a rule for xargs may cover it.
	XargsInert bool
	// Foreign: the command names its program by a path outside the
	// system directories (./ls); ProgramPaths are the files it may be
	// (programpath.go). Only a rule naming that file covers it.
	Foreign      bool
	ProgramPaths []string
}

// Env is where a command line runs, as the analysis needs it: the
// directory it starts in and the home directory ~ names. Both absolute
// and clean; "" when not known.
type Env struct {
	Workspace, Home string
}

// Analysis is the static picture of a shell command line.
type Analysis struct {
	Commands []SimpleCommand
	// Undecidable lists why parts of the command cannot be decided statically
	// (dynamic command names, eval of variables, parse errors …). A command
	// with any undecidable part is never allowed by a rule.
	Undecidable []string
	// WriteTargets are the (cleaned) files output redirections write to.
	WriteTargets []string
	// Files are the files the command line reads, writes or names, from
	// its redirections and the arguments of the commands it runs
	// (fileuse.go), resolved as the shell would.
	Files []FileAccess
	// ForkBombs names functions that call themselves piped or backgrounded.
	ForkBombs []string
	// DotGlob is set when the command line may turn bash's dotglob on
	// (shopt -s dotglob, bash -O dotglob, GLOBIGNORE=…): then * matches
	// names starting with a dot.
	DotGlob bool
}

// Analyze parses a shell command line and splits it into simple commands.
// It is deterministic and never panics on any input.
func Analyze(command string, env Env) *Analysis {
	// Room for the commands of a usual line, so that recording them does
	// not copy them again and again.
	a := &analyzer{env: env, out: &Analysis{Commands: make([]SimpleCommand, 0, 8)}}
	if len(command) > maxCommandBytes {
		a.undecidable("command is longer than the analysis limit")
		return a.out
	}
	a.cdpath = strings.Contains(command, "CDPATH")
	a.parse(command, 0, startCwd(env))
	return a.out
}

// homeDir is the home directory ~ and $HOME name, or "" once the line
// assigned HOME (then they are not known here).
func (a *analyzer) homeDir() string {
	if a.homeChanged {
		return ""
	}
	return a.env.Home
}

type analyzer struct {
	env       Env
	out       *Analysis
	funcCalls int
	// cdpath is set when the command line mentions CDPATH, which lets a
	// relative cd land outside the directory it names.
	cdpath bool
	// exported are the variables the line may have put into the
	// environment of the commands after it, in the order first set;
	// shellOnly those it set as the shell's own (shellstate.go).
	exported, shellOnly []envVar
	// allexport: set -a (or a shell started with -a) exports every
	// assignment after it.
	allexport bool
	// envUnknown says why the environment of later commands cannot be
	// told (a sourced file); envGen counts changes of the state, so that
	// a loop whose body changed it is walked again.
	envUnknown string
	envGen     int
	// outer are the environments given to the commands whose scripts
	// are being walked (X=1 bash -c '…'), innermost last.
	outer [][]envVar
	// homeChanged: the line assigned HOME, so ~ and $HOME are not known.
	homeChanged bool
}

func (a *analyzer) undecidable(reason string) {
	for _, r := range a.out.Undecidable {
		if r == reason {
			return
		}
	}
	a.out.Undecidable = append(a.out.Undecidable, reason)
}

// parse parses src as a bash script and walks it. depth counts re-parses of
// strings handed to a shell (bash -c, eval, heredocs); cwd is where it
// starts, and the directories it may end in are returned (for eval).
func (a *analyzer) parse(src string, depth int, cwd cwdSet) cwdSet {
	if depth > maxShellDepth {
		a.undecidable("shell nesting is too deep to analyse")
		return cwdSet{unknown: true}
	}
	parser := parsers.Get().(*syntax.Parser)
	f, err := parser.Parse(strings.NewReader(src), "")
	parsers.Put(parser) // done with it: the tree it built is the caller's
	if err != nil {
		a.undecidable("shell parse error: " + err.Error())
		// Deny rules still apply to whatever can be recovered.
		f, err = syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.RecoverErrors(8)).Parse(strings.NewReader(src), "")
		if err != nil || f == nil {
			return cwdSet{unknown: true}
		}
	}
	w := &walker{a: a, src: src, depth: depth, cwd: cwd, curCmd: -1}
	w.stmts(f.Stmts, 0)
	end := w.cwd
	w.walkTraps()
	w.finishArith()
	return end
}

// parsers are bash parsers, reused: a parser is kilobytes of buffers, the
// biggest allocation of a policy decision, and may parse again once it is
// done (mvdan.cc/sh's Parser.Parse).
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// walker walks one parsed source; src is needed to render dynamic words.
type walker struct {
	a     *analyzer
	src   string
	depth int
	// seen holds the substitutions already walked: a word can be reached
	// twice (a redirection target is also evaluated), and walking it again at
	// every nesting level would be exponential.
	seen map[syntax.Node]bool
	// cwd is where the next command may run: cd changes it, subshells and
	// pipeline parts restore it.
	cwd cwdSet
	// vars are the values shell variables may hold (shellvars.go), used
	// only when substVars is set: to resolve file paths.
	vars        map[string]*varState
	varsUnknown bool
	substVars   bool
	// curCmd is the index of the command whose operands are being
	// recorded, -1 outside emit.
	curCmd int
	// cdTo is set when the statement just walked (cdStmt) was a cd: the
	// directories it leads to when it succeeds (what "cd x && …" runs in).
	cdTo      *cwdSet
	cdStmt    *syntax.Stmt
	cdPending bool
	// inFindExec counts find -exec commands being walked.
	inFindExec int
	// funcs are the functions declared so far (with the source they were
	// declared in), calling the ones being walked at a call site.
	funcs   map[string]funcBody
	calling map[string]bool
	// cmdEnv are the variables assigned for the command being walked
	// (PAGER=x git log, env PAGER=x git log), judged (shellstate.go).
	cmdEnv []envVar
	// traps are the actions trap set, walked when the script ends.
	traps []string
	// arithRefs are the variables bash evaluates (arith.go), judged when
	// the walk ends.
	arithRefs []arithRef
}

// maxFuncCalls bounds how many function calls one analysis walks into.
const maxFuncCalls = 32

// funcBody is a declared function: its body and the source it is in.
type funcBody struct {
	stmt *syntax.Stmt
	src  string
}

// callFunc walks a declared function's body at a call: it runs in this
// shell, from the current directory, and a cd inside it counts afterwards.
func (w *walker) callFunc(name string, nd int) {
	body := w.funcs[name]
	if body.stmt == nil || w.calling[name] {
		return // not a function, or a recursive call: walked already
	}
	if w.a.funcCalls++; w.a.funcCalls > maxFuncCalls {
		w.a.undecidable("too many function calls to analyse")
		return
	}
	if w.calling == nil {
		w.calling = map[string]bool{}
	}
	w.calling[name] = true
	seen, src := w.seen, w.src
	w.seen = nil // substitutions in the body resolve anew from here
	w.src = body.src
	w.stmt(body.stmt, nd+1)
	w.seen, w.src = seen, src
	delete(w.calling, name)
}

// scoped walks f in a subshell: a cd inside does not reach what follows.
func (w *walker) scoped(f func()) {
	saved := w.cwd.clone()
	f()
	w.cwd = saved
}

// looped walks a body that may run any number of times (a loop, a function
// called later): a cd inside leaves the directory unknown afterwards, and
// a variable it exports reaches its commands on the next round, so the
// body is walked again with it.
func (w *walker) looped(f func()) {
	before := w.cwd.clone()
	gen := w.a.envGen
	f()
	if w.a.envGen != gen {
		seen := w.seen
		w.seen = nil
		f()
		w.seen = seen
	}
	if !w.cwd.equal(before) {
		w.cwd = cwdSet{unknown: true}
	}
}

func (w *walker) first(n syntax.Node) bool {
	if w.seen == nil {
		w.seen = map[syntax.Node]bool{}
	}
	if w.seen[n] {
		return false
	}
	w.seen[n] = true
	return true
}

func (w *walker) source(n syntax.Node) string {
	s, e := n.Pos(), n.End()
	if !s.IsValid() || !e.IsValid() || s.IsRecovered() || e.IsRecovered() {
		return "?"
	}
	so, eo := int(s.Offset()), int(e.Offset())
	if so < 0 || eo > len(w.src) || so > eo {
		return "?"
	}
	return w.src[so:eo]
}

func (w *walker) stmts(ss []*syntax.Stmt, nd int) {
	for _, s := range ss {
		w.stmt(s, nd)
	}
}

// stmt interprets one statement: its redirections, then its command. It is
// long because it is one case per kind of command in mvdan.cc/sh's syntax
// tree (call, pipeline, subshell, if, loops, case, functions, ...), each short.
func (w *walker) stmt(s *syntax.Stmt, nd int) {
	if s == nil {
		return
	}
	if nd > maxNodeDepth {
		w.a.undecidable("command nesting is too deep to analyse")
		return
	}
	defer func() {
		if w.cdStmt != s {
			w.cdTo = nil
		}
	}()
	var heredocShell []*syntax.Redirect
	for _, r := range s.Redirs {
		w.redirect(r, nd)
		if r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc || r.Op == syntax.WordHdoc {
			heredocShell = append(heredocShell, r)
		}
	}
	switch c := s.Cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		w.call(c, heredocShell, s.Redirs, nd)
		if w.cdPending {
			w.cdStmt, w.cdPending = s, false
		}
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			// Every part of a pipeline runs in a subshell.
			w.scoped(func() { w.stmt(c.X, nd+1) })
			w.scoped(func() { w.stmt(c.Y, nd+1) })
			break
		}
		w.stmt(c.X, nd+1)
		if c.Op == syntax.AndStmt && w.cdTo != nil {
			// cd x && y: y runs only where the cd led; afterwards the
			// cd may also have failed.
			after := w.cwd.clone()
			w.cwd = *w.cdTo
			w.stmt(c.Y, nd+1)
			w.cwd.union(after)
		} else {
			w.stmt(c.Y, nd+1)
		}
		if c.Op == syntax.AndStmt && w.cdTo != nil && w.cdStmt == c.Y {
			w.cdStmt = s // a && cd x: what follows with && runs in x
		}
	case *syntax.Subshell:
		w.scoped(func() { w.stmts(c.Stmts, nd+1) })
	case *syntax.Block:
		w.stmts(c.Stmts, nd+1)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			w.stmts(ic.Cond, nd+1)
			w.stmts(ic.Then, nd+1)
		}
	case *syntax.WhileClause:
		w.looped(func() {
			w.stmts(c.Cond, nd+1)
			w.stmts(c.Do, nd+1)
		})
	case *syntax.ForClause:
		w.nested(c.Loop, nd+1)
		w.forVar(c.Loop)
		w.looped(func() { w.stmts(c.Do, nd+1) })
	case *syntax.CaseClause:
		w.wordNested(c.Word, nd+1)
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				w.wordNested(p, nd+1)
			}
			w.stmts(it.Stmts, nd+1)
		}
	case *syntax.FuncDecl:
		name := ""
		if c.Name != nil {
			name = c.Name.Value
		}
		if name != "" && selfCallsPipedOrBackground(name, c.Body) {
			w.a.out.ForkBombs = append(w.a.out.ForkBombs, name)
		}
		// The body is walked here, so its commands are judged even if the
		// call cannot be seen, and again at each call, from the directory
		// the call runs in (command).
		if name != "" {
			if w.funcs == nil {
				w.funcs = map[string]funcBody{}
			}
			w.funcs[name] = funcBody{stmt: c.Body, src: w.src}
		}
		w.scoped(func() { w.stmt(c.Body, nd+1) })
	case *syntax.TimeClause:
		w.stmt(c.Stmt, nd+1)
	case *syntax.CoprocClause:
		w.stmt(c.Stmt, nd+1)
	case *syntax.DeclClause:
		// declare/local/export/readonly: only assignments; look for
		// substitutions in their values.
		w.nested(c, nd+1)
		w.assigns(c.Args)
		w.declClauseEnv(c)
	default:
		// Arithmetic, [[ ]], let, …: no command of their own, but they may
		// hold command substitutions.
		w.nested(c, nd+1)
	}
}

// nested finds command and process substitutions anywhere below n and walks
// their statements.
func (w *walker) nested(n syntax.Node, nd int) {
	if n == nil {
		return
	}
	syntax.Walk(n, func(node syntax.Node) bool {
		switch x := node.(type) {
		case *syntax.CmdSubst:
			if w.first(x) {
				w.scoped(func() { w.stmts(x.Stmts, nd+1) })
			}
			return false
		case *syntax.ProcSubst:
			if w.first(x) {
				w.scoped(func() { w.stmts(x.Stmts, nd+1) })
			}
			return false
		default:
			// Arithmetic and variable names: code hidden in them (arith.go).
			w.arithNode(node)
		}
		return true
	})
}

func (w *walker) wordNested(word *syntax.Word, nd int) {
	if word != nil {
		w.nested(word, nd)
	}
}

func (w *walker) redirect(r *syntax.Redirect, nd int) {
	if r.N != nil && strings.HasPrefix(r.N.Value, "{") {
		// {fd}>file sets fd; a subscript in the name is evaluated.
		name := strings.TrimSuffix(strings.TrimPrefix(r.N.Value, "{"), "}")
		w.nameText(name, r.N)
		if i := strings.IndexByte(name, '['); i >= 0 {
			name = name[:i]
		}
		w.setIntVar(name)
	}
	w.wordNested(r.Word, nd)
	w.wordNested(r.Hdoc, nd)
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
		syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut, syntax.DplOut:
		if r.Word == nil {
			return
		}
		vals, static := w.word(r.Word)
		if r.Op == syntax.DplOut && static && len(vals) == 1 && programs.IsFD(vals[0]) {
			return // >&2 duplicates a descriptor, it names no file
		}
		for _, v := range vals {
			w.a.out.WriteTargets = append(w.a.out.WriteTargets, v)
		}
		kind := programs.AccessWrite
		if r.Op == syntax.RdrInOut {
			kind = programs.AccessReadWrite
		}
		w.redirectAccess(kind, r.Word, vals, static, isProcSubst(r.Word))
	case syntax.RdrIn, syntax.DplIn:
		if r.Word == nil {
			return
		}
		vals, static := w.word(r.Word)
		if r.Op == syntax.DplIn && static && len(vals) == 1 && programs.IsFD(vals[0]) {
			return // <&3 duplicates a descriptor
		}
		w.redirectAccess(programs.AccessRead, r.Word, vals, static, isProcSubst(r.Word))
	}
}

// isProcSubst reports a word that is one process substitution: a pipe to a
// command (analysed on its own), not a file.
func isProcSubst(word *syntax.Word) bool {
	if word == nil || len(word.Parts) != 1 {
		return false
	}
	_, ok := word.Parts[0].(*syntax.ProcSubst)
	return ok
}

// word is one evaluated shell word: its possible static values (several after
// brace expansion) and whether it is fully static.
func (w *walker) word(word *syntax.Word) ([]string, bool) {
	if word == nil || len(word.Parts) == 0 {
		return []string{""}, true
	}
	cp := &syntax.Word{Parts: append([]syntax.WordPart(nil), word.Parts...)}
	syntax.SplitBraces(cp)
	vals, static := w.parts(cp.Parts, true)
	return vals, static
}

// parts evaluates word parts into their possible values. first marks the
// start of a word, where an unquoted ~ expands. It is long because it is one
// case per kind of word part in mvdan.cc/sh's syntax tree, each short.
func (w *walker) parts(parts []syntax.WordPart, first bool) ([]string, bool) {
	vals := []string{""}
	static := true
	appendAll := func(alts []string) {
		if len(vals)*len(alts) > maxBraceExpand {
			static = false
			alts = alts[:1]
		}
		next := make([]string, 0, len(vals)*len(alts))
		for _, v := range vals {
			for _, s := range alts {
				next = append(next, v+s)
			}
		}
		vals = next
	}
	for i, p := range parts {
		switch x := p.(type) {
		case *syntax.Lit:
			s := unescapeUnquoted(x.Value)
			if i == 0 && first && strings.HasPrefix(x.Value, "~") {
				if x.Value == "~" || strings.HasPrefix(x.Value, "~/") {
					if h := w.a.homeDir(); h != "" {
						s = h + s[1:]
					} else {
						static = false
					}
				} else {
					static = false // ~user: another user's home, unknown here
				}
			}
			appendAll([]string{s})
		case *syntax.SglQuoted:
			if x.Dollar && strings.Contains(x.Value, `\`) {
				static = false // $'\x72m': ANSI-C escapes are not decoded here
				appendAll([]string{w.source(x)})
				continue
			}
			appendAll([]string{x.Value})
		case *syntax.DblQuoted:
			// Alternatives only come from tracked variables (substVars).
			alts := []string{""}
			add := func(ss ...string) {
				if len(alts)*len(ss) > maxBraceExpand {
					static = false
					ss = ss[:1]
				}
				next := make([]string, 0, len(alts)*len(ss))
				for _, a := range alts {
					for _, s := range ss {
						next = append(next, a+s)
					}
				}
				alts = next
			}
			for _, q := range x.Parts {
				switch y := q.(type) {
				case *syntax.Lit:
					add(unescapeDouble(y.Value))
				case *syntax.ParamExp:
					if h, ok := w.home(y); ok {
						add(h)
					} else if vs, ok := w.lookupVar(y); ok {
						add(vs...)
					} else {
						w.nested(y, 0)
						static = false
						add(w.source(y))
					}
				default:
					w.nested(y, 0)
					static = false
					add(w.source(y))
				}
			}
			appendAll(alts)
		case *syntax.ParamExp:
			if h, ok := w.home(x); ok {
				appendAll([]string{h})
				continue
			}
			if vs, ok := w.lookupVar(x); ok {
				appendAll(vs)
				continue
			}
			w.nested(x, 0)
			static = false
			appendAll([]string{w.source(x)})
		case *syntax.BraceExp:
			if x.Sequence {
				static = false
				appendAll([]string{w.source(x)})
				continue
			}
			var alts []string
			for _, e := range x.Elems {
				ev, st := w.parts(e.Parts, false)
				static = static && st
				alts = append(alts, ev...)
				if len(alts) > maxBraceExpand {
					static = false
					break
				}
			}
			if len(alts) == 0 {
				alts = []string{""}
			}
			appendAll(alts)
		default:
			// Command/process substitution, arithmetic, extended globs:
			// walk what runs inside, keep the source text as the value.
			w.nested(x, 0)
			if _, ok := x.(*syntax.ExtGlob); !ok {
				static = false
			}
			appendAll([]string{w.source(x)})
		}
	}
	return vals, static
}

// home reports whether a parameter expansion is plain $HOME / ${HOME}.
func (w *walker) home(p *syntax.ParamExp) (string, bool) {
	if p.Param == nil || p.Param.Value != "HOME" || w.a.homeDir() == "" {
		return "", false
	}
	if p.Excl || p.Length || p.Width || p.IsSet || p.Index != nil || p.Slice != nil ||
		p.Repl != nil || p.Names != 0 || p.Exp != nil || p.NestedParam != nil || p.Flags != nil {
		return "", false
	}
	return w.a.homeDir(), true
}

// unescapeUnquoted removes backslash quoting outside quotes: \x → x, and a
// backslash-newline disappears.
func unescapeUnquoted(s string) string { return pathglob.UnescapeBytes(s, "", true) }

// unescapeDouble removes the backslashes that are special inside double quotes.
func unescapeDouble(s string) string { return pathglob.UnescapeBytes(s, "$`\"\\\n", true) }

func (w *walker) call(c *syntax.CallExpr, heredocs, redirs []*syntax.Redirect, nd int) {
	for _, as := range c.Assigns {
		w.nested(as, nd)
		if as.Name != nil && as.Name.Value == "GLOBIGNORE" {
			w.a.out.DotGlob = true
		}
	}
	if len(c.Args) == 0 {
		w.assigns(c.Assigns) // X=v alone sets X for the rest of the script
		w.statementEnv(c.Assigns)
	}
	var args []programs.Word
	for _, word := range c.Args {
		vals, static := w.word(word)
		if !static && len(vals) == 1 && vals[0] == "" {
			vals[0] = w.source(word)
		}
		pipe := isProcSubst(word)
		for _, v := range vals {
			args = append(args, programs.Word{Text: v, Static: static, Pipe: pipe, Node: word})
		}
	}
	if len(args) == 0 {
		return
	}
	w.cdPending = false // a cd in a substitution above is not this command
	saved := w.cmdEnv
	w.cmdEnv = w.commandEnv(c.Assigns)
	w.command(args, wrapping{}, heredocs, redirs, nd)
	w.cmdEnv = saved
}

// shells are the interpreters whose -c string (or heredoc on stdin) is
// re-parsed as shell code.
var shells = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true,
	"ash": true, "busybox": false, "fish": true,
}

// Privileged reports a wrapper that runs its command as another user
// (sudo, doas …).
func Privileged(name string) bool { return privileged[name] }

// privileged are wrappers that run their command as another user.
var privileged = map[string]bool{"sudo": true, "doas": true, "pkexec": true, "run0": true}

// command interprets one argv (after wrappers before it were stripped),
// one decision read top to bottom: a program named by a path, wrappers
// (wrapper), shells and eval (shellCommand), the builtins that change the
// shell's state, the commands that run others, then the command itself.
func (w *walker) command(args []programs.Word, wrappers wrapping, heredocs, redirs []*syntax.Redirect, nd int) {
	if nd > maxNodeDepth {
		w.a.undecidable("command nesting is too deep to analyse")
		return
	}
	if !args[0].Static {
		w.a.undecidable("command name is not static: " + args[0].Text)
		return
	}
	name := path.Base(args[0].Text)
	if args[0].Text == "" {
		name = ""
	}
	rest := args[1:]
	if len(wrappers.names) == 0 && name == args[0].Text {
		w.callFunc(name, nd)
	}
	if _, foreign := w.programPath(args[0]); foreign {
		// ./env, ./bash, ./timeout: a file of that name, not the wrapper
		// or shell it is named like (programpath.go).
		w.emit(args, wrappers)
		return
	}

	if name == "flock" && w.flockScript(args, wrappers) {
		return
	}
	// Wrappers: record them and analyse the command they run.
	if inner, ok := programs.Unwrap(name, rest); ok {
		w.wrapper(name, inner, args, wrappers, heredocs, redirs, nd)
		return
	}

	w.builtinNames(name, rest)
	w.stateBuiltin(name, rest)
	switch {
	case shells[name]:
		if w.shellCommand(name, args, wrappers, heredocs, redirs) {
			return
		}
	case name == "eval":
		var parts []string
		for _, r := range rest {
			if !r.Static {
				w.emit(args, wrappers)
				w.a.undecidable("eval of a dynamic string")
				return
			}
			parts = append(parts, r.Text)
		}
		// eval runs in this shell: a cd inside it counts afterwards, and
		// it may assign any variable.
		w.cwd = w.parseNested(strings.Join(parts, " "), w.cwd.clone())
		w.varsUnknown = true
		return
	case name == "cd" || name == "pushd":
		defer w.cd(rest)
	case name == "popd" || name == "source" || name == ".":
		// popd returns to a directory pushed earlier, a sourced script may
		// cd anywhere (and set any variable, function or alias): the
		// directory and the state after them are unknown.
		defer func() {
			w.cwd, w.varsUnknown = cwdSet{unknown: true}, true
			if name != "popd" {
				w.setUnknownEnv(strings.TrimSpace(name + " " + argText(rest)))
			}
		}()
	case name == "find":
		w.findExec(rest, wrappers, nd)
	case varSetters[name]:
		defer w.commandSetsVars(name, rest)
	case name == "watch":
		w.watch(rest, nd)
	}
	w.emit(args, wrappers)
}

// wrapper records a wrapper (env, sudo, timeout …) and analyses the
// command it runs, which starts at args[inner+1]; inner < 0: which
// command it runs cannot be told.
func (w *walker) wrapper(name string, inner int, args []programs.Word, wrappers wrapping, heredocs, redirs []*syntax.Redirect, nd int) {
	rest := args[1:]
	if inner < 0 {
		if privileged[name] || name == "su" {
			w.emit(args, wrappers) // e.g. bare "sudo -i": still a sudo
		}
		w.a.undecidable("cannot tell which command " + name + " runs")
		return
	}
	if inner >= len(rest) {
		w.emit(args, wrappers) // wrapper alone, e.g. "env" or "sudo -v"
		return
	}
	switch {
	case name == "env":
		w.wrapperEnv(rest[:inner])
	case name == "exec" && len(rest) > 0 && rest[0].Static && strings.HasPrefix(rest[0].Text, "-") && strings.Contains(rest[0].Text, "c"):
		w.cmdEnv = append(w.cmdEnv, unsetPath("on the command", "exec "+rest[0].Text)) // exec -c: an empty environment
	}
	if privileged[name] {
		// Record the privileged wrapper itself, so presets see it even
		// when the wrapped command is harmless.
		w.emit(args[:1], wrappers)
	}
	programs.WrapperOperands(w, name, rest[:inner])
	if name == "env" && envChdir(rest[:inner]) {
		// env -C DIR runs the command elsewhere.
		w.scoped(func() {
			w.cwd = cwdSet{unknown: true}
			w.command(rest[inner:], wrappers.add(args[:inner+1]), heredocs, redirs, nd+1)
		})
		return
	}
	if name == "xargs" {
		w.xargsEnv(rest[:inner])
	}
	w.command(rest[inner:], wrappers.add(args[:inner+1]), heredocs, redirs, nd+1)
	if name == "xargs" {
		w.xargsRuns(rest[:inner], rest[inner:], len(wrappers.names) == 0)
	}
}

// shellCommand reads a shell run as a command (bash -c SCRIPT, sh <<EOF):
// its script is walked as code. It reports whether it recorded the
// command; when not, the command is recorded like any other.
func (w *walker) shellCommand(name string, args []programs.Word, wrappers wrapping, heredocs, redirs []*syntax.Redirect) bool {
	rest := args[1:]
	if setsAllexport(rest) {
		w.a.allexport = true // bash -a: every assignment of its script is exported
	}
	script, ok, reads := shellScript(rest)
	switch {
	case ok && script.Static:
		w.emit(args, wrappers)
		w.parseNested(script.Text, w.cwd.clone())
		return true
	case ok:
		w.emit(args, wrappers)
		w.a.undecidable(name + " -c with a dynamic script")
		return true
	case reads:
		w.emit(args, wrappers)
		if len(heredocs) == 0 {
			w.a.undecidable(name + " reads its script from standard input")
			return true
		}
		for _, h := range heredocs {
			body := h.Hdoc
			if h.Op == syntax.WordHdoc {
				body = h.Word
			}
			vals, static := w.word(body)
			if !static || len(vals) != 1 {
				w.a.undecidable("heredoc fed to " + name + " is not static")
				continue
			}
			w.parseNested(vals[0], w.cwd.clone())
		}
		return true
	}
	for _, r := range redirs {
		if r.Op == syntax.RdrIn {
			w.a.undecidable(name + " reads a script from a file")
		}
	}
	return false
}

// shellScript finds the script of a shell invocation: the argument after -c
// (also in clusters such as -lc or -xec). reads is true when the shell would
// read its script from standard input (no -c and no script file operand).
func shellScript(rest []programs.Word) (script programs.Word, ok, reads bool) {
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if !a.Static {
			return programs.Word{}, false, false
		}
		switch {
		case a.Text == "--" || a.Text == "-":
			if i+1 < len(rest) {
				return programs.Word{}, false, false
			}
			return programs.Word{}, false, true
		case a.Text == "-o" || a.Text == "+o" || a.Text == "-O" || a.Text == "+O" || a.Text == "--rcfile" || a.Text == "--init-file":
			i++ // option with a value
		case strings.HasPrefix(a.Text, "--"):
		case strings.HasPrefix(a.Text, "-") || strings.HasPrefix(a.Text, "+"):
			if strings.Contains(a.Text[1:], "c") {
				if i+1 < len(rest) {
					return rest[i+1], true, false
				}
				return programs.Word{}, false, false
			}
			if strings.Contains(a.Text[1:], "s") {
				return programs.Word{}, false, true
			}
		default:
			return programs.Word{}, false, false // a script file operand
		}
	}
	return programs.Word{}, false, true
}

// findExec emits the commands find runs with -exec, -execdir, -ok, -okdir.
func (w *walker) findExec(rest []programs.Word, wrappers wrapping, nd int) {
	for i := 0; i < len(rest); i++ {
		switch rest[i].Text {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(rest) && rest[j].Text != ";" && rest[j].Text != "+" {
				j++
			}
			if j > i+1 {
				w.inFindExec++ // {} is whatever find finds
				w.command(rest[i+1:j], wrappers, nil, nil, nd+1)
				w.inFindExec--
			}
			i = j
		case "-delete":
			// find … -delete removes what it finds; presets model it as rm -r.
			var paths []programs.Word
			for _, r := range rest {
				if strings.HasPrefix(r.Text, "-") || r.Text == "!" || r.Text == "(" {
					break
				}
				paths = append(paths, r)
			}
			if len(paths) > 0 {
				synthetic := append([]programs.Word{{Text: "rm", Static: true}, {Text: "-r", Static: true}}, paths...)
				w.emit(synthetic, wrappers.add([]programs.Word{{Text: "find", Static: true}}))
			}
		}
	}
}

// watch runs its arguments joined with spaces through sh -c.
func (w *walker) watch(rest []programs.Word, nd int) {
	i := 0
	for i < len(rest) && strings.HasPrefix(rest[i].Text, "-") {
		switch rest[i].Text {
		case "-n", "--interval", "-d", "-q", "--equexit":
			if rest[i].Text == "-n" || rest[i].Text == "--interval" || rest[i].Text == "-q" {
				i++
			}
		}
		i++
	}
	var parts []string
	for _, r := range rest[min(i, len(rest)):] {
		if !r.Static {
			w.a.undecidable("watch of a dynamic command")
			return
		}
		parts = append(parts, r.Text)
	}
	if len(parts) > 0 {
		w.parseNested(strings.Join(parts, " "), w.cwd.clone())
	}
}

// wrapping is the chain of wrapper commands around a command.
type wrapping struct {
	words []programs.Word // their full argv, in order
	names []string        // their basenames, outermost first
}

func (wr wrapping) add(args []programs.Word) wrapping {
	return wrapping{
		words: append(append([]programs.Word(nil), wr.words...), args...),
		names: append(append([]string(nil), wr.names...), path.Base(args[0].Text)),
	}
}

// emit records a simple command.
func (w *walker) emit(args []programs.Word, wr wrapping) {
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = a.Text
	}
	sc := normaliseWords(words)
	sc.Argv = words
	sc.ProgramPaths, sc.Foreign = w.programPath(args[0])
	if len(wr.names) > 0 {
		sc.Wrappers = wr.names
		full := make([]string, 0, len(wr.words)+len(args))
		for _, x := range wr.words {
			full = append(full, x.Text)
		}
		full = append(full, words...)
		sc.Raw = normaliseWords(full).Text
		sc.Argv = full
	}
	w.a.out.Commands = append(w.a.out.Commands, sc)
	for _, word := range sc.Argv {
		if strings.Contains(word, "dotglob") || strings.HasPrefix(word, "GLOBIGNORE=") {
			w.a.out.DotGlob = true
		}
	}
	w.curCmd = len(w.a.out.Commands) - 1
	w.operands(args)
	w.judgeEnv(args[0].Text, wr)
	w.curCmd = -1
}

// cd applies cd/pushd arguments to the working directory set.
func (w *walker) cd(rest []programs.Word) {
	for _, a := range rest {
		if a.Static && strings.HasPrefix(a.Text, "-") && a.Text != "-" && a.Text != "--" {
			continue // -L, -P, -e, -@
		}
		if a.Static && a.Text == "--" {
			continue
		}
		if a.Static && strings.HasPrefix(a.Text, "+") {
			w.cwd = cwdSet{unknown: true} // pushd +N rotates the stack
			return
		}
		targets := []programs.Word{a}
		if !a.Static && a.Node != nil && w.tracking() {
			if vals, static := w.wordVars(a.Node); static {
				targets = targets[:0]
				for _, v := range vals {
					targets = append(targets, programs.Word{Text: v, Static: true})
				}
			}
		}
		before, after, to := w.cwd.clone(), cwdSet{}, cwdSet{}
		for i, t := range targets {
			if w.a.cdpath && t.Static && !strings.HasPrefix(t.Text, "/") && !strings.HasPrefix(t.Text, ".") {
				t = programs.Word{Text: t.Text} // CDPATH may send a relative cd anywhere
			}
			c := before.clone()
			ti := c.cd(t, w.a.homeDir())
			if i == 0 {
				after, to = c, ti
				continue
			}
			after.union(c)
			to.union(ti)
		}
		w.cwd = after
		w.cdTo, w.cdPending = &to, true
		return
	}
	to := w.cwd.cd(programs.Word{Text: "", Static: true}, w.a.homeDir()) // cd alone: home
	w.cdTo, w.cdPending = &to, true
}

// envChdir reports env -C DIR / --chdir.
func envChdir(words []programs.Word) bool {
	for _, a := range words {
		if a.Static && (a.Text == "--chdir" || strings.HasPrefix(a.Text, "--chdir=") ||
			(strings.HasPrefix(a.Text, "-") && !strings.HasPrefix(a.Text, "--") && strings.Contains(a.Text, "C"))) {
			return true
		}
	}
	return false
}

// normaliseWords builds the normalised form of argv: basename of the name,
// cleaned paths, and for alias-table commands sorted, de-aliased flags.
func normaliseWords(words []string) SimpleCommand {
	if len(words) == 0 {
		return SimpleCommand{}
	}
	sc := SimpleCommand{Name: path.Base(words[0])}
	if words[0] == "" {
		sc.Name = ""
	}
	for _, a := range words[1:] {
		sc.Args = append(sc.Args, programs.CleanArg(a))
	}
	parts := []string{quoteWord(sc.Name)}
	if flags, positionals, ok := programs.Flags(sc.Name, sc.Args); ok {
		sc.Flags, sc.Positionals = flags, positionals
		for _, f := range flags {
			if len(f) == 1 {
				parts = append(parts, "-"+f)
			} else {
				parts = append(parts, quoteWord("--"+f))
			}
		}
		for _, p := range positionals {
			parts = append(parts, quoteWord(p))
		}
	} else {
		sc.Positionals = sc.Args
		text := sc.Args
		if p := programs.Lookup(sc.Name); p != nil && p.Splits() {
			text = p.TextArgs(sc.Args) // tar -tf x.tar is tar -t -f x.tar
		}
		for _, a := range text {
			parts = append(parts, quoteWord(a))
		}
	}
	sc.Text = strings.Join(parts, " ")
	sc.Raw = sc.Text
	return sc
}

// quoteWord renders a word unambiguously in a normalised command line.
func quoteWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// selfCallsPipedOrBackground reports whether the function body calls name in
// a pipeline or in the background: the shape of a fork bomb.
func selfCallsPipedOrBackground(name string, body *syntax.Stmt) bool {
	found := false
	var visit func(s *syntax.Stmt, piped bool, depth int)
	visit = func(s *syntax.Stmt, piped bool, depth int) {
		if s == nil || found || depth > maxNodeDepth {
			return
		}
		bg := piped || s.Background || s.Coprocess
		switch c := s.Cmd.(type) {
		case *syntax.CallExpr:
			if bg && len(c.Args) > 0 && c.Args[0].Lit() == name {
				found = true
			}
		case *syntax.BinaryCmd:
			p := bg || c.Op == syntax.Pipe || c.Op == syntax.PipeAll
			visit(c.X, p, depth+1)
			visit(c.Y, p, depth+1)
		case *syntax.Block:
			for _, x := range c.Stmts {
				visit(x, bg, depth+1)
			}
		case *syntax.Subshell:
			for _, x := range c.Stmts {
				visit(x, bg, depth+1)
			}
		case *syntax.IfClause:
			for ic := c; ic != nil; ic = ic.Else {
				for _, x := range ic.Then {
					visit(x, bg, depth+1)
				}
			}
		case *syntax.WhileClause:
			for _, x := range c.Do {
				visit(x, bg, depth+1)
			}
		}
	}
	visit(body, false, 0)
	return found
}
