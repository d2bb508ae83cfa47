package programs

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Program knowledge as data, so that what custos knows of a program is read
// in one place rather than spread through the walker. Every program custos reads is one
// entry of programTable (programs_table.go): its options, whether each takes
// a value and what it does (runs a program, changes what the program loads
// or where it acts, reads or writes the file its value names), the
// environment variables that make it run another program, the roles of its
// operands, and commands that must and must not be allowed under a
// Bash(<entry>:*) rule, which package approval checks against its rules
// (TableExamples).
//
// What an entry says decides two things:
//   - the files the command reads and writes (judged by the Read and Edit
//     rules in package approval, exactly like a redirection);
//   - what an allow rule covers: an option that runs a program or changes
//     what the program loads, a variable that does, an option the entry
//     does not know, or a script that cannot be read is a Finding on the
//     command, and an allow rule covers the command only when it names
//     what was found.
//
// A partial entry (cp, curl, …) lists only the options that name files:
// its other options are not judged, as before the table existed.

// Finding is something in one command that an allow rule for the
// program covers only when the rule names it.
type Finding struct {
	// Program is the table entry that decided ("rg", "git diff").
	Program string `json:"program"`
	// Option is the option, script command or variable found ("--pre",
	// "e", "PAGER").
	Option string `json:"option"`
	// Words are the words of the command line a rule must name to cover it.
	Words []string `json:"words,omitempty"`
	// What says what it does ("runs a program").
	What string `json:"what"`
	// Env is set for a variable the line set (EnvLine, EnvWrapper):
	// a rule for the command's text alone does not name it.
	Env EnvOrigin `json:"-"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s %s %s (entry %s)", f.Program, f.Option, f.What, f.Program)
}

// Finding reasons.
const (
	whatRuns     = "runs a program"
	whatLoads    = "changes what the program loads or where it acts"
	whatUnknown  = "is an option custos does not know"
	whatDynamic  = "is built at run time and may be an option"
	whatScript   = "is a script custos cannot read"
	WhatEnvRuns  = "is a variable that makes the program run another one"
	whatSubShell = "runs a shell command"
	whatChanges  = "changes the repository"
)

type valueKind uint8

const (
	valNone     valueKind = iota
	valRequired           // -o FILE, -oFILE, --output FILE, --output=FILE
	valOptional           // --color[=WHEN], -i[SUFFIX]: attached only
	valTwo                // --arg NAME VALUE (jq): the next two words
)

// effect is what an option does; an option may do several things.
type effect uint32

const (
	effRun        effect = 1 << iota // runs a program (its value, or one it configures)
	effLoad                          // changes what the program loads or where it acts
	effRead                          // reads the file its value names
	effWrite                         // writes the file its value names
	effDir                           // writes into the directory its value names (cp -t)
	effLead                          // supplies the pattern or script: no lead operand (grep -e)
	effInPlace                       // edits the operands in place (sed -i)
	effStdout                        // writes to standard output: operands are only read (gzip -c)
	effScript                        // its value is a script (sed -e, awk --source)
	effScriptFile                    // its value is a script file custos cannot read (sed -f)
	effSandbox                       // the program refuses to run or open files from its script
	effReadOps                       // the operands are files read (git diff --no-index)
	effInclude                       // gawk -i: inplace edits in place, anything else loads code
	effAtFile                        // a value @FILE is a file read (curl -d @f)
	effChanges                       // changes the repository (git branch -D): no read-only rule covers it
	effLists                         // the operands are patterns of what it lists (git branch --list)
	effWritesAny                     // writes files the command line does not name (make -t)
)

var effectNames = map[string]effect{
	"run": effRun, "load": effLoad, "read": effRead, "write": effWrite, "dir": effDir,
	"lead": effLead, "inplace": effInPlace, "stdout": effStdout, "script": effScript,
	"scriptfile": effScriptFile, "sandbox": effSandbox, "readops": effReadOps,
	"include": effInclude, "atfile": effAtFile, "changes": effChanges, "lists": effLists,
	"writesany": effWritesAny,
}

// option is one option of a program, with all its spellings.
type option struct {
	names  []string
	value  valueKind
	effect effect
}

// operandSpec describes a command's operands: which are files it reads or
// writes.
type operandSpec struct {
	lead      int  // leading operands that are not files (a pattern, a script)
	role      role // role of the other operands
	lastDest  bool // with ≥2 operands the last is written (cp, mv, ln)
	secondOut bool // the second operand is written (uniq IN OUT, xxd IN OUT)
	sourcesRW bool // sources are moved away (mv): read and written
	assigns   bool // NAME=value operands are assignments (awk)
}

// program is one entry of the table.
type Program struct {
	name    string
	aliases []string
	// opts are the options in the table's notation: space-separated
	// spellings joined by |, then = (takes a value) or =? (an attached
	// value only), then :effects (comma-separated names of effectNames).
	// "-#" allows -NUM (head -5). Example: "-f|--file=:read,lead --pre=:run".
	opts string
	// env are variables that make the program run another one (or load
	// what it runs); a trailing * is a prefix (GIT_CONFIG_*).
	env []string
	// partial: only the options that name files are listed; other options
	// are not judged (the writers and fetchers of the file analysis).
	partial bool
	// singleDash: -name is one option (find, go), never a cluster.
	singleDash bool
	// subcommands: the first operand names a subcommand whose entry is
	// name+" "+operand; options before it are the program's global options.
	subcommands bool
	// plusCmds: a +WORD operand is a command run at start (less +G).
	plusCmds bool
	// clusters: the entry's special reads options with scanOptions, so
	// its clusters are split in the command's text like a plain entry's
	// (textArgs).
	clusters bool
	// oldStyle: a first word without a dash is a cluster whose values
	// are the words after it, in order (tar tf x.tar, tar czf a.tgz d).
	oldStyle bool
	// modules: -m MODULE selects the entry name+" -m "+MODULE (python).
	modules bool
	// changes says what effChanges does ("changes the repository").
	changes  string
	operands operandSpec
	// special handles operands (and options) that do not fit operandSpec.
	special func(w Walker, p *Program, rest []Word)
	// script parses the program's script (sed, awk) for what it runs,
	// reads and writes.
	script func(w Walker, p *Program, script Word, sandboxed bool)
	// allow and ask are example commands: each allow one must be allowed
	// under Bash(<name>:*), no ask one may be (TableExamples).
	allow, ask []string

	// Compiled from opts.
	short     map[byte]*option
	long      map[string]*option
	longNames []string // sorted, for abbreviations
	dashNum   bool
	dangerous bool // some option runs, loads or writes: a word built at run time may be one
	parent    *Program
}

// compile parses p.opts.
func (p *Program) compile() error {
	p.short, p.long = map[byte]*option{}, map[string]*option{}
	for _, tok := range strings.Fields(p.opts) {
		if tok == "-#" {
			p.dashNum = true
			continue
		}
		spec, effs, _ := strings.Cut(tok, ":")
		o := &option{}
		switch {
		case strings.HasSuffix(spec, "=="):
			o.value, spec = valTwo, strings.TrimSuffix(spec, "==")
		case strings.HasSuffix(spec, "=?"):
			o.value, spec = valOptional, strings.TrimSuffix(spec, "=?")
		case strings.HasSuffix(spec, "="):
			o.value, spec = valRequired, strings.TrimSuffix(spec, "=")
		}
		if effs != "" {
			for _, e := range strings.Split(effs, ",") {
				bit, ok := effectNames[e]
				if !ok {
					return fmt.Errorf("program %s: option %s: unknown effect %q", p.name, tok, e)
				}
				o.effect |= bit
			}
		}
		if o.effect&(effRun|effLoad|effWrite|effDir|effInPlace|effInclude|effChanges|effWritesAny) != 0 {
			p.dangerous = true
		}
		for _, n := range strings.Split(spec, "|") {
			o.names = append(o.names, n)
			switch {
			case p.singleDash && strings.HasPrefix(n, "-"):
				p.long[strings.TrimLeft(n, "-")] = o
			case strings.HasPrefix(n, "--") && len(n) > 2:
				p.long[n[2:]] = o
			case strings.HasPrefix(n, "-") && len(n) == 2 || strings.HasPrefix(n, "+") && len(n) == 2:
				p.short[n[1]] = o
			default:
				return fmt.Errorf("program %s: bad option spelling %q", p.name, n)
			}
		}
	}
	//workflowcheck:ignore the names are sorted below
	for n := range p.long {
		p.longNames = append(p.longNames, n)
	}
	slices.Sort(p.longNames)
	return nil
}

// longOpt finds a long option by name or by an unambiguous abbreviation
// (getopt_long and git's parse-options accept --out for --output).
func (p *Program) longOpt(k string) (*option, string) {
	if o, ok := p.long[k]; ok {
		return o, k
	}
	if k == "" {
		return nil, ""
	}
	var found *option
	name := ""
	i, _ := slices.BinarySearch(p.longNames, k)
	for ; i < len(p.longNames) && strings.HasPrefix(p.longNames[i], k); i++ {
		o := p.long[p.longNames[i]]
		if found != nil && found != o {
			return nil, "" // ambiguous: the program refuses it
		}
		found, name = o, p.longNames[i]
	}
	return found, name
}

// EnvRuns reports whether assigning name makes p run another program.
func (p *Program) EnvRuns(name string) bool {
	for q := p; q != nil; q = q.parent {
		for _, e := range q.env {
			if pre, ok := strings.CutSuffix(e, "*"); ok && strings.HasPrefix(name, pre) || e == name {
				return true
			}
		}
	}
	return false
}

// byName is the table by name and alias (filled in init, programs_table.go).
var byName map[string]*Program

// programsErr is what building the table found when the package loaded;
// TableExamples returns it, and package approval refuses to compile a
// policy with a broken table (fail closed).
var programsErr error

func buildPrograms(table []Program) (map[string]*Program, error) {
	m := map[string]*Program{}
	var errs []string
	for i := range table {
		p := &table[i]
		if err := p.compile(); err != nil {
			errs = append(errs, err.Error())
		}
		for _, n := range append([]string{p.name}, p.aliases...) {
			if m[n] != nil {
				errs = append(errs, "program "+n+" is in the table twice")
			}
			m[n] = p
		}
	}
	for _, p := range m {
		if parent, _, ok := strings.Cut(p.name, " "); ok {
			p.parent = m[parent]
			if p.parent == nil || !p.parent.subcommands && !p.parent.modules {
				errs = append(errs, "program "+p.name+" has no parent entry with subcommands")
			}
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return m, fmt.Errorf("program table: %s", strings.Join(errs, "; "))
	}
	return m, nil
}

// scanned is what a command's options said, and the operands left.
type scanned struct {
	ops                                      []Word
	hasLeadOpt, inPlace, toStdout, targetDir bool
	readOps, sandboxed, listing              bool
	scripts                                  []Word
	scriptFile                               bool
}

// scanOptions walks the words of one command: options that name files are
// recorded as they come (-o FILE, --output=FILE, -t DIR, @FILE), options
// that run programs or that the entry does not know are findings; the rest
// say how to read the operands, which are returned.
func (p *Program) scanOptions(w Walker, rest []Word) scanned {
	var o scanned
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case !a.Static && strings.HasPrefix(a.Text, "-"):
			p.dynamicOption(w, a)
		case !a.Static:
			if p.dangerous && !p.partial {
				w.Find(Finding{Program: p.name, Option: a.Text, Words: []string{a.Text}, What: whatDynamic})
			}
			o.ops = append(o.ops, a)
		case p.plusCmds && strings.HasPrefix(a.Text, "+"):
			if !safePlusCommand(a.Text[1:]) {
				w.Find(Finding{Program: p.name, Option: a.Text, Words: []string{a.Text}, What: "is a command run at start, which may run a program"})
			}
		case a.Text == "-" || !strings.HasPrefix(a.Text, "-"):
			o.ops = append(o.ops, a)
		case a.Text == "--":
			o.ops = append(o.ops, rest[i+1:]...)
			i = len(rest)
		case strings.HasPrefix(a.Text, "--") || p.singleDash:
			i = p.scanLong(w, &o, rest, i)
		default:
			i = p.scanCluster(w, &o, rest, i)
		}
	}
	return o
}

// dynamicOption judges an option built at run time (--output=$OUT,
// -o"$F"): its value cannot be resolved; it is judged by what the option
// does, and as unknown when the option cannot be told.
func (p *Program) dynamicOption(w Walker, a Word) {
	var opt *option
	name := a.Text
	if strings.HasPrefix(a.Text, "--") || p.singleDash {
		k, _, _ := strings.Cut(strings.TrimLeft(a.Text, "-"), "=")
		if !strings.ContainsAny(k, "$`\"'") {
			opt, name = p.longOpt(k)
			name = "--" + name
		}
	} else if len(a.Text) > 1 && !strings.ContainsAny(a.Text[1:2], "$`\"'") {
		opt, name = p.short[a.Text[1]], a.Text[:2]
	}
	switch {
	case opt == nil && p.partial:
		w.Mention(Word{Text: a.Text}, "option of "+p.name)
	case opt == nil:
		w.Find(Finding{Program: p.name, Option: a.Text, Words: []string{a.Text}, What: whatDynamic})
	default:
		p.applyOption(w, nil, opt, name, Word{Text: a.Text}, true, []string{a.Text})
	}
}

// scanLong reads one long option at rest[i] and returns the index of the
// last word it used.
func (p *Program) scanLong(w Walker, o *scanned, rest []Word, i int) int {
	a := rest[i]
	k, v, hasV := strings.Cut(strings.TrimLeft(a.Text, "-"), "=")
	opt, name := p.longOpt(k)
	if opt == nil && strings.HasPrefix(k, "no-") && p.parent != nil && p.parent.name == "git" {
		// git accepts --no-X for its options; the negation runs nothing.
		if neg, _ := p.longOpt(k[3:]); neg != nil {
			return i
		}
	}
	if opt == nil {
		if p.partial {
			if hasV {
				w.Mention(Word{Text: v, Static: true}, "option of "+p.name)
			}
			return i
		}
		w.Find(Finding{Program: p.name, Option: "--" + k, Words: []string{a.Text}, What: whatUnknown})
		return i
	}
	dash := "--"
	if p.singleDash && !strings.HasPrefix(a.Text, "--") {
		dash = "-"
	}
	words := []string{a.Text}
	if p.Splits() {
		words = opt.longText(a.Text, v, hasV) // as the command's text has it (programs_text.go)
	}
	val := Word{Text: v, Static: true}
	switch {
	case hasV:
	case opt.value == valRequired && i+1 < len(rest):
		i++
		val = rest[i]
		words = append(words, val.Text)
		hasV = true
	case opt.value == valTwo && i+2 < len(rest):
		// --arg NAME VALUE, --rawfile NAME FILE: what the option reads
		// or runs is the second.
		val = rest[i+2]
		words = append(words, rest[i+1].Text, val.Text)
		i += 2
		hasV = true
	}
	p.applyOption(w, o, opt, dash+name, val, hasV, words)
	return i
}

// scanCluster reads one cluster of short options (-la, -oFILE, -o FILE) at
// rest[i] and returns the index of the last word it used.
//
// A finding names the words a rule must hold to cover it: for an entry
// whose command text splits clusters (textArgs) the option and its value
// as that text has them (-t -f x.tar -I x.sh), otherwise the cluster.
func (p *Program) scanCluster(w Walker, o *scanned, rest []Word, i int) int {
	cluster := rest[i].Text[1:]
	split := p.Splits()
	for j := 0; j < len(cluster); j++ {
		c := cluster[j]
		if p.dashNum && c >= '0' && c <= '9' {
			continue
		}
		word := rest[i].Text
		if split {
			word = "-" + cluster[j:j+1]
		}
		opt := p.short[c]
		if opt == nil {
			if !p.partial {
				if split {
					word = "-" + cluster[j:]
				}
				w.Find(Finding{Program: p.name, Option: "-" + string(c), Words: []string{word}, What: whatUnknown})
			}
			if p.partial {
				continue
			}
			return i // what follows an unknown letter cannot be told
		}
		if opt.value == valNone {
			p.applyOption(w, o, opt, "-"+string(c), Word{}, false, []string{word})
			continue
		}
		words := []string{word}
		v, hasV := Word{Text: cluster[j+1:], Static: true}, cluster[j+1:] != ""
		switch {
		case hasV && split && opt.value == valRequired:
			words = append(words, v.Text)
		case hasV && split:
			words = []string{"-" + cluster[j:]} // an optional value stays attached
		case !hasV && opt.value == valRequired && i+1 < len(rest):
			i++
			v, hasV = rest[i], true
			words = append(words, v.Text)
		}
		p.applyOption(w, o, opt, "-"+string(c), v, hasV, words)
		return i
	}
	return i
}

// applyOption records what one option does. o is nil for an option built
// at run time (its value is not resolved).
func (p *Program) applyOption(w Walker, o *scanned, opt *option, name string, v Word, hasV bool, words []string) {
	e := opt.effect
	if e&effRun != 0 {
		w.Find(Finding{Program: p.name, Option: name, Words: words, What: whatRuns})
	}
	if e&effLoad != 0 {
		w.Find(Finding{Program: p.name, Option: name, Words: words, What: whatLoads})
	}
	if e&effChanges != 0 {
		w.Find(Finding{Program: p.name, Option: name, Words: words, What: cmp.Or(p.changes, whatChanges)})
	}
	if e&effWritesAny != 0 {
		// The files are named by the program's own input (a makefile's
		// targets): a write custos cannot resolve, which a person decides.
		w.OptionAccess(AccessWrite, Word{Text: "(files " + p.name + " " + name + " chooses)"}, p.name, name, false)
	}
	if e&effInclude != 0 && hasV {
		if v.Static && v.Text == "inplace" && o != nil {
			o.inPlace = true
		} else {
			w.Find(Finding{Program: p.name, Option: name, Words: words, What: "loads code (" + v.Text + ")"})
		}
	}
	if hasV && e&effAtFile != 0 && v.Static && (strings.HasPrefix(v.Text, "@") || strings.Contains(v.Text, "=@")) {
		f := v.Text[1:]
		if _, after, ok := strings.Cut(v.Text, "=@"); ok && !strings.HasPrefix(v.Text, "@") {
			f = after // -F name=@file
		}
		w.OptionAccess(AccessRead, Word{Text: f, Static: true}, p.name, name, false)
	}
	if hasV && e&(effRead|effScriptFile) != 0 {
		w.OptionAccess(AccessRead, v, p.name, name, false)
	}
	if hasV && e&effWrite != 0 {
		w.OptionAccess(AccessWrite, v, p.name, name, false)
	}
	if hasV && e&effDir != 0 {
		w.OptionAccess(AccessWrite, v, p.name, name, true)
	}
	if o == nil {
		return
	}
	if e&effDir != 0 {
		o.targetDir = true
	}
	if e&effLists != 0 {
		o.listing = true
	}
	if e&(effLead|effScript|effScriptFile) != 0 {
		o.hasLeadOpt = true
	}
	if e&effScript != 0 && hasV {
		o.scripts = append(o.scripts, v)
	}
	if e&effScriptFile != 0 {
		o.scriptFile = true
		w.Find(Finding{Program: p.name, Option: name, Words: words, What: "reads its script from a file, which custos cannot read"})
	}
	o.inPlace = o.inPlace || e&effInPlace != 0
	o.toStdout = o.toStdout || e&effStdout != 0
	o.readOps = o.readOps || e&effReadOps != 0
	o.sandboxed = o.sandboxed || e&effSandbox != 0
}

// safePlusCommand reports a less/more start command that runs nothing: a
// line number, G, F, or a search for a pattern.
func safePlusCommand(c string) bool {
	if c == "" || c == "G" || c == "F" || c == "g" {
		return true
	}
	if strings.Trim(c, "0123456789") == "" {
		return true
	}
	if c[0] == '/' || c[0] == '?' {
		return !strings.ContainsAny(c, "\n\r\x1b") && !strings.ContainsAny(c[1:], "!|")
	}
	return false
}

// EnvOrigin says where the variable of a finding was set, which decides
// the rules that name it: a rule for the command's text alone names none.
type EnvOrigin uint8

// Finding origins.
const (
	EnvNone    EnvOrigin = iota // not a variable: the command's own words
	EnvLine                     // set on the command or earlier: only a rule naming the whole line names it
	EnvWrapper                  // set by env NAME=value: the command's Raw line names it
)

// Lookup is the table's entry for a program or a subcommand ("git log",
// "python -m json.tool"), or nil when the table has none.
func Lookup(name string) *Program { return byName[name] }

// Name is the entry's program, with its subcommand ("git log").
func (p *Program) Name() string { return p.name }
