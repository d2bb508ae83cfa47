package programs

import (
	"path"
	"strings"
)

// Entries for programs people allow by a prefix that reads as harmless
// (a rule such as Bash(tar -t:*) reads as a list, not a program runner):
// tar's modes, make's makefiles and variables, date's clock,
// python -m json.tool's output file.

// tarModes are tar's operation modes, by the first spelling of each.
var tarModes = map[string]bool{"-A": true, "-c": true, "-d": true, "--delete": true, "-r": true,
	"-t": true, "--test-label": true, "-u": true, "-x": true}

// tarFacts are what tar's options say about its files.
type tarFacts struct {
	mode                         string
	archive                      Word
	dir                          *Word // -C DIR: where operands are and files go
	dirs                         int
	absolute, toStdout, removing bool
	forceLocal                   bool
}

func tarFactsOf(p *Program, rest []Word) tarFacts {
	f := tarFacts{archive: Word{Text: "-", Static: true}}
	opts, _ := p.parseOpts(rest)
	for _, o := range opts {
		switch {
		case tarModes[o.name]:
			f.mode = o.name
		case o.name == "-f" && o.hasV:
			f.archive = o.val
		case o.name == "-C" && o.hasV:
			d := o.val
			f.dir = &d
			f.dirs++
		case o.name == "-P":
			f.absolute = true
		case o.name == "-O" || o.name == "--to-command":
			f.toStdout = true // extracted files go to a pipe, not the disk
		case o.name == "--remove-files":
			f.removing = true
		case o.name == "--force-local":
			f.forceLocal = true
		}
	}
	return f
}

// tarWords: old-style first words read as options; then what the mode
// does to the archive (-f, or standard input and output), to the operands
// (files read by -c, -r, -u and -d, archives by -A, members by -x, -t and
// --delete) and, for -x, to the directory the members are written in.
// Options that run a program (-I, --to-command, --checkpoint-action,
// --info-script, --rsh-command) are findings from the table, and so is an
// archive on another host (host:path), which tar reaches with rsh.
func tarWords(w Walker, p *Program, rest []Word) {
	rest = p.expandOldStyle(rest)
	o := p.scanOptions(w, rest)
	f := tarFactsOf(p, rest)
	if a := f.archive; a.Static && !f.forceLocal && remoteArchive(a.Text) {
		w.Find(Finding{Program: p.name, Option: "-f", Words: []string{"-f", a.Text}, What: "names an archive on another host, which tar reaches by running rsh"})
	}
	switch f.mode {
	case "-t", "-d", "--test-label", "-x":
		w.OptionAccess(AccessRead, f.archive, p.name, "-f", false)
	case "-c":
		w.OptionAccess(AccessWrite, f.archive, p.name, "-f", false)
	case "-r", "-u", "-A", "--delete":
		w.OptionAccess(AccessReadWrite, f.archive, p.name, "-f", false)
	}
	// Operands and members are relative to -C DIR once it is given, and
	// to where tar started before it: both are judged.
	dir := f.dir
	if f.dirs > 1 {
		dir = &Word{} // which -C applies where is not followed: unknown
	}
	in := func(fn func()) { w.Within(dir, fn) }
	switch f.mode {
	case "-c", "-r", "-u", "-d", "-A":
		kind := AccessRead
		if f.removing {
			kind = AccessReadWrite // --remove-files deletes what it archived
		}
		in(func() {
			for _, a := range o.ops {
				w.Access(kind, a, "tar "+f.mode+" operand")
			}
		})
	case "-x":
		if f.toStdout {
			return
		}
		if f.absolute {
			w.OptionAccess(AccessWrite, Word{Text: "(the archive's absolute paths)"}, p.name, "-P", false)
			return
		}
		in(func() {
			w.Destination(Word{Text: ".", Static: true}, "tar -x destination")
			for _, a := range o.ops {
				w.Access(AccessWrite, a, "tar -x member")
			}
		})
	}
}

// remoteArchive reports tar's host:path archive name (a colon before any
// slash), which GNU tar opens with rsh unless --force-local.
func remoteArchive(s string) bool {
	i := strings.IndexByte(s, ':')
	return i > 0 && !strings.Contains(s[:i], "/")
}

// makeWords: make runs the workspace's makefile (its recipes, or under -n
// its $(shell …) and + lines: the workspace's code, as a test is for go
// test); what the command line adds to it is judged: options that bring
// in another makefile or code (-f, -I, -C, --eval, -e: the table) and
// variables set on the command line (CC=sh, X=$(shell …)), which the
// makefile's recipes and functions expand. Targets are mentions.
func makeWords(w Walker, p *Program, rest []Word) {
	o := p.scanOptions(w, rest)
	for _, a := range o.ops {
		if k, _, ok := strings.Cut(a.Text, "="); ok && k != "" && !strings.Contains(k, "/") {
			w.Find(Finding{Program: p.name, Option: a.Text, Words: []string{a.Text},
				What: "sets a make variable, which the makefile's recipes and $(shell …) expand"})
			w.Mention(a, "make variable") // make FILE=.env: the value may be a file
			continue
		}
		w.Mention(a, "make target")
	}
}

// dateWords: +FORMAT prints; any other operand sets the system clock.
func dateWords(w Walker, p *Program, rest []Word) {
	o := p.scanOptions(w, rest)
	for _, a := range o.ops {
		if !strings.HasPrefix(a.Text, "+") {
			w.Find(Finding{Program: p.name, Option: a.Text, Words: []string{a.Text}, What: p.changes})
		}
	}
}

// pythonShort are the interpreter's options: those that take a value,
// then the flags.
const (
	pythonValued = "WXmc"
	pythonFlags  = "bBdEhiIOPqRsSuvVx?"
)

// pythonWords reads the interpreter's options up to -m MODULE, -c or the
// script: a module the table has an entry for (python -m json.tool) is
// judged by it; anything else python runs is not judged here (the rule
// that allows it covers everything it can do), its words are mentions.
func pythonWords(w Walker, p *Program, rest []Word) {
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if !a.Static || a.Text == "-" || a.Text == "--" || !strings.HasPrefix(a.Text, "-") || strings.HasPrefix(a.Text, "--") {
			pythonMentions(w, rest[i:])
			return
		}
		for j := 1; j < len(a.Text); j++ {
			c := a.Text[j]
			if strings.IndexByte(pythonValued, c) < 0 {
				if strings.IndexByte(pythonFlags, c) < 0 {
					pythonMentions(w, rest[i:])
					return
				}
				continue
			}
			val, next := a.Text[j+1:], i+1
			if val == "" && i+1 < len(rest) {
				val, next = rest[i+1].Text, i+2
				if !rest[i+1].Static {
					pythonMentions(w, rest[i:])
					return
				}
			}
			switch c {
			case 'm':
				pythonModule(w, p, val, rest[min(next, len(rest)):])
				return
			case 'c':
				pythonMentions(w, rest[min(next, len(rest)):])
				return
			}
			i = next - 1
			break
		}
	}
}

// pythonModule judges python -m MODULE ARGS by the module's entry.
func pythonModule(w Walker, p *Program, module string, args []Word) {
	sub := byName[p.name+" -m "+module]
	if sub == nil {
		w.Unjudged(w.CommandName() + " -m " + module)
		for _, a := range args {
			w.Mention(a, "argument of "+w.CommandName())
		}
		return
	}
	sub.Read(w, "", args)
}

// pythonMentions: what python runs without an entry (a script, -c, a
// module the table does not know) is not judged; its words are mentions.
func pythonMentions(w Walker, words []Word) {
	w.Unjudged(w.CommandName())
	for _, a := range words {
		w.Mention(a, "argument of "+path.Base(w.CommandName()))
	}
}
