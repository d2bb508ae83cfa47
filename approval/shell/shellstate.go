package shell

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The shell's state. A Bash call is one bash -c in an
// environment the sandbox builds afresh, so only the line itself changes
// what a later command of it finds: a variable exported before it, one set
// on it (X=v cmd, env X=v cmd) or for the shell that runs it (X=v bash -c
// '…'), and the ways bash has of making a name mean another program
// (alias, hash -p, enable, a function exported or a file sourced).
//
// What the line sets is judged by what is known to be inert, never by what
// is known to be dangerous: a variable that is not on inertEnv, or whose
// value its check refuses, is a finding on every later command that runs a
// program, which only a rule naming the whole line covers (Bash(X=1 make));
// a variable that makes any program run or load other code
// (dangerousAssign) leaves the line undecidable, so no rule covers it.
//
// The state only grows: a variable once set is judged for every command
// walked after it, in a subshell, a branch not taken or after an unset
// too (an over-approximation, never a miss), and a loop whose body sets
// one is walked again.

// envVar is one variable a command may find in its environment because
// the line set it.
type envVar struct {
	name  string
	inert bool
	// why says why the value is not inert, when that is more than "not a
	// variable known to be inert".
	why string
	// where says how it got there: "on the command", "earlier in the
	// line", "for the shell that runs it".
	where string
	// word is the assignment as the line spells it, which a rule names to
	// cover it.
	word string
	// wrapper: set by env NAME=value, so the command's Raw line names it.
	wrapper bool
}

// inertEnv are the variables whose value cannot change which program runs,
// what it loads or where it reads and writes: with a check, only the
// values the check accepts; nil accepts any value. Each entry says why.
// (Claude Code keeps a similar list of variables it strips before matching
// a prefix rule; custos judges the values of those that name files.)
var inertEnv = map[string]func(*analyzer, string) bool{
	// Locale names select message catalogues and character tables under
	// the system's locale directories; a value with a slash is a path
	// glibc reads locale data from (and gettext catalogues, whose format
	// strings run in printf), so only plain names are inert.
	"LANG": localeValue, "LANGUAGE": localeValue,
	// TZ names a zone file below /usr/share/zoneinfo; ":/path", "/path"
	// or ".." make glibc parse a file of the line's choosing.
	"TZ": tzValue,
	// A terminal type is looked up in the system's terminfo directories;
	// TERMINFO (not inert) would move them.
	"TERM": termValue,
	// Colour, width and mode switches: read as words or numbers, they
	// name no file and no program.
	"COLORTERM": nil, "NO_COLOR": nil, "FORCE_COLOR": nil, "CLICOLOR": nil, "CLICOLOR_FORCE": nil,
	"COLUMNS": nil, "LINES": nil, "CI": nil, "RUST_BACKTRACE": nil,
	"PYTHONUNBUFFERED": nil, "PYTHONDONTWRITEBYTECODE": nil,
	// NODE_ENV picks a branch of the workspace's own code and
	// configuration (development, test, production), never another program.
	"NODE_ENV": nil,
	// HOME and XDG_* say where programs read their configuration (git's
	// core.fsmonitor, a pager, hooks): inert only when they point at
	// system directories the sandbox cannot write, never into the
	// workspace or a writable place.
	"HOME": homeValue,
}

// inertCheck returns the check of a variable on inertEnv (LC_* and XDG_*
// included); ok is false when the variable is not on it.
func inertCheck(name string) (check func(*analyzer, string) bool, ok bool) {
	if c, ok := inertEnv[name]; ok {
		return c, true
	}
	switch {
	case strings.HasPrefix(name, "LC_"):
		return localeValue, true
	case strings.HasPrefix(name, "XDG_"):
		return xdgValue, true
	}
	return nil, false
}

// dangerousAssign are variables that make any program run or load other
// code (or the shell read another script): set by the line, they leave it
// undecidable, so that no rule covers it. PATH is judged by its entries
// (pathInert).
var dangerousAssign = map[string]bool{
	"PATH": true, "BASH_ENV": true, "ENV": true, "IFS": true, "PROMPT_COMMAND": true,
	"SHELLOPTS": true, "BASHOPTS": true, "PS4": true, "GIT_EXEC_PATH": true,
	"GIT_SSH_COMMAND": true, "GIT_CONFIG_GLOBAL": true, "PYTHONSTARTUP": true,
	"NODE_OPTIONS": true, "PERL5OPT": true,
}

// dangerous reports a variable of dangerousAssign, or one of the loader's
// (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, DYLD_INSERT_LIBRARIES …) or an
// exported function (BASH_FUNC_name%%).
func dangerous(name string) bool {
	return dangerousAssign[name] || strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "DYLD_") ||
		strings.HasPrefix(name, "BASH_FUNC_")
}

// promptVars are expanded as prompts, substitutions and all: PS4 for every
// command set -x traces, builtins too (so no builtin is immune to it), the
// others by an interactive shell.
var promptVars = map[string]bool{"PS0": true, "PS1": true, "PS2": true, "PS4": true, "PROMPT_COMMAND": true}

// promptValue leaves the line undecidable when it gives a prompt variable
// a value that may hold code ($(…), `…`, $x): bash would run it where no
// command of the line shows it.
func (w *walker) promptValue(name string, vals []string, static bool) {
	for _, v := range vals {
		static = static && !strings.ContainsAny(v, "$`")
	}
	if !static || name == "PROMPT_COMMAND" && len(vals) > 0 && vals[0] != "" {
		w.a.undecidable(name + " is expanded as a prompt (set -x traces every command with PS4): the code its value may hold would run")
	}
}

// possiblyInherited reports a variable that may be in the environment the
// line starts with, so that assigning it changes what later commands find:
// any name with an upper-case letter, and the lower-case ones programs read
// (proxies, npm's configuration). Any other name is the line's own shell
// variable (f in for f in *.go) until it is exported.
func possiblyInherited(name string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] >= 'A' && name[i] <= 'Z' {
			return true
		}
	}
	return strings.HasSuffix(name, "_proxy") || strings.HasPrefix(name, "npm_config_")
}

// envValue judges NAME=value for the values vals (static false: the value
// is not known here).
func (w *walker) envValue(name string, vals []string, static bool, where, word string) envVar {
	v := envVar{name: name, where: where, word: word}
	if promptVars[name] {
		w.promptValue(name, vals, static)
	}
	check, ok := inertCheck(name)
	switch {
	case name == "PATH":
		v.inert, v.why = w.a.pathStatic(vals, static)
	case !ok:
	case check == nil:
		v.inert = true
	case !static:
		v.why = "its value is not known here"
	default:
		v.inert = true
		for _, s := range vals {
			if !check(w.a, s) {
				v.inert, v.why = false, "the value "+quoteWord(s)+" is not one known to be inert"
				break
			}
		}
	}
	return v
}

// envAssign judges one assignment of the syntax tree (X=v, X+=v, X[i]=v).
func (w *walker) envAssign(as *syntax.Assign, where string) envVar {
	word := w.source(as)
	name := as.Name.Value
	check, listed := inertCheck(name)
	switch {
	case name != "PATH" && !promptVars[name] && (!listed || check == nil):
		return w.envValue(name, nil, false, where, word) // judged by its name alone
	case as.Append || as.Index != nil || as.Array != nil:
		return w.envValue(name, nil, false, where, word)
	case as.Value == nil:
		return w.envValue(name, []string{""}, true, where, word)
	case name == "PATH":
		v := envVar{name: name, where: where, word: word}
		v.inert, v.why = w.pathWord(as.Value.Parts)
		return v
	}
	vals, static := w.wordVars(as.Value)
	return w.envValue(name, vals, static, where, word)
}

// setEnv records a variable the line sets for the rest of it: exported
// (export, declare -x, set -a, or a name the environment may already
// hold) or kept as the shell's own until an export names it.
func (w *walker) setEnv(v envVar, export bool) {
	a := w.a
	if v.name == "HOME" {
		a.homeChanged = true // ~ and $HOME now mean the line's value
	}
	if export || a.allexport || possiblyInherited(v.name) || hasEnv(a.exported, v.name) {
		if putEnv(&a.exported, v) {
			a.envGen++
		}
		return
	}
	putEnv(&a.shellOnly, v)
}

// exportName exports a variable the line set earlier without exporting
// it (f=x; export f); an inherited one keeps its value.
func (w *walker) exportName(name string) {
	for _, v := range w.a.shellOnly {
		if v.name == name {
			w.setEnv(v, true)
		}
	}
}

// noteVar records a variable a command or an expansion assigns with a
// value known or not (read, printf -v, for, arithmetic, ${X:=v}).
func (w *walker) noteVar(name string, vals []string, static bool) {
	if name != "" {
		w.setEnv(w.envValue(name, vals, static, "earlier in the line", name+"="), false)
	}
}

func hasEnv(vs []envVar, name string) bool {
	for _, v := range vs {
		if v.name == name {
			return true
		}
	}
	return false
}

// putEnv adds v or replaces an inert value of the same name with it (a
// value that is not inert stays: the state only grows); it reports a change.
func putEnv(vs *[]envVar, v envVar) bool {
	for i := range *vs {
		if (*vs)[i].name != v.name {
			continue
		}
		if !(*vs)[i].inert || v.inert {
			return false
		}
		(*vs)[i] = v
		return true
	}
	*vs = append(*vs, v)
	return true
}

// localeValue accepts plain locale names (C, C.UTF-8, de_DE@euro), a
// colon-separated list of them for LANGUAGE.
func localeValue(_ *analyzer, s string) bool {
	for _, n := range strings.Split(s, ":") {
		if strings.HasPrefix(n, ".") || strings.Trim(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.@-") != "" {
			return false
		}
	}
	return true
}

// tzValue accepts a zone name below the system's zoneinfo (UTC,
// Europe/Paris) or a POSIX rule (EST5EDT,M3.2.0,M11.1.0).
func tzValue(_ *analyzer, s string) bool {
	s = strings.TrimPrefix(s, ":")
	return !strings.HasPrefix(s, "/") && !strings.Contains(s, "..") &&
		strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-/,.:<>") == ""
}

func termValue(_ *analyzer, s string) bool {
	return s != "" && !strings.HasPrefix(s, ".") &&
		strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+-") == ""
}

// homeValue accepts a home directory no configuration can be planted in.
func homeValue(a *analyzer, s string) bool {
	return s == "/nonexistent" || s == "/var/empty" || s == "/dev/null" || a.systemDir(s)
}

// xdgValue accepts XDG_* directories (colon-separated lists for
// XDG_CONFIG_DIRS and XDG_DATA_DIRS) that are system directories.
func xdgValue(a *analyzer, s string) bool {
	for _, d := range strings.Split(s, ":") {
		if !homeValue(a, d) {
			return false
		}
	}
	return true
}

// systemDirs hold the system's programs and data, which a command in the
// sandbox cannot change.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc", "/nix/store", "/snap"}

// systemDir reports an absolute directory below systemDirs that neither
// lies in nor holds the workspace or the home directory (a configuration
// directory that holds the workspace would read the workspace's files as
// configuration).
func (a *analyzer) systemDir(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
		return false
	}
	p = path.Clean(p)
	for _, d := range []string{a.env.Workspace, a.env.Home} {
		if d != "" && (isAncestorOrSelf(p, d) || isAncestorOrSelf(d, p)) {
			return false
		}
	}
	for _, s := range systemDirs {
		if p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

// pathStatic judges PATH's static values: every entry a system directory.
func (a *analyzer) pathStatic(vals []string, static bool) (bool, string) {
	if !static {
		return false, "its value is not known here"
	}
	for _, v := range vals {
		for _, e := range strings.Split(v, ":") {
			if ok, why := a.pathEntry(e); !ok {
				return false, why
			}
		}
	}
	return true, ""
}

// pathEntry judges one static entry of PATH.
func (a *analyzer) pathEntry(e string) (bool, string) {
	switch {
	case e == "":
		return false, "an empty entry is the current directory"
	case !strings.HasPrefix(e, "/"):
		return false, "the entry " + quoteWord(e) + " is relative"
	case !a.systemDir(e):
		return false, "the entry " + quoteWord(e) + " is not a system directory"
	}
	return true, ""
}

// Markers of pathWord's rendering: a plain $PATH, and anything else
// dynamic.
const (
	markPath = "\x01"
	markDyn  = "\x00"
)

// pathWord judges the value of PATH=… from its syntax: the inherited
// $PATH (unless the line made it not inert) and system directories are
// fine; a relative, empty or dynamic entry, or one the sandbox can write,
// is not.
func (w *walker) pathWord(parts []syntax.WordPart) (bool, string) {
	val := w.pathText(parts, false)
	for _, e := range strings.Split(val, ":") {
		switch {
		case e == markPath:
			if v, ok := w.envNow("PATH"); ok && !v.inert {
				return false, "$PATH is not inert here"
			}
		case strings.Contains(e, markDyn) || strings.Contains(e, markPath):
			return false, "an entry is built at run time"
		default:
			if ok, why := w.a.pathEntry(e); !ok {
				return false, why
			}
		}
	}
	return true, ""
}

// pathText renders a PATH value with the markers; bash expands ~ at the
// start and after every colon of an assignment (a home directory is no
// system directory).
func (w *walker) pathText(parts []syntax.WordPart, quoted bool) string {
	var b strings.Builder
	for _, p := range parts {
		switch x := p.(type) {
		case *syntax.Lit:
			s := x.Value
			if quoted {
				s = unescapeDouble(s)
			} else {
				if strings.HasPrefix(s, "~") || strings.Contains(s, ":~") {
					s = strings.ReplaceAll(s, "~", markDyn)
				}
				s = unescapeUnquoted(s)
			}
			b.WriteString(s)
		case *syntax.SglQuoted:
			if x.Dollar {
				b.WriteString(markDyn)
			} else {
				b.WriteString(x.Value)
			}
		case *syntax.DblQuoted:
			b.WriteString(w.pathText(x.Parts, true))
		case *syntax.ParamExp:
			if x.Param != nil && x.Param.Value == "PATH" && plainParam(x) {
				b.WriteString(markPath)
			} else {
				b.WriteString(markDyn)
			}
		default:
			b.WriteString(markDyn)
		}
	}
	return b.String()
}

// plainParam reports $x or ${x} without any operator.
func plainParam(p *syntax.ParamExp) bool {
	return !(p.Excl || p.Length || p.Width || p.IsSet || p.Index != nil || p.Slice != nil ||
		p.Repl != nil || p.Names != 0 || p.Exp != nil || p.NestedParam != nil || p.Flags != nil)
}

// envNow returns the value of name a command walked here would find set by
// the line: on it, for the shell running it, or earlier.
func (w *walker) envNow(name string) (envVar, bool) {
	for _, v := range w.cmdEnv {
		if v.name == name {
			return v, true
		}
	}
	for i := len(w.a.outer) - 1; i >= 0; i-- {
		for _, v := range w.a.outer[i] {
			if v.name == name {
				return v, true
			}
		}
	}
	for _, v := range w.a.exported {
		if v.name == name {
			return v, true
		}
	}
	return envVar{}, false
}

// isAncestorOrSelf reports whether dir is base or one of its ancestors.
func isAncestorOrSelf(dir, base string) bool {
	if base == "" {
		return false
	}
	base = path.Clean(base)
	return dir == base || dir == "/" || strings.HasPrefix(base, strings.TrimSuffix(dir, "/")+"/")
}
