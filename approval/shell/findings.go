package shell

import (
	"slices"

	"github.com/custos-dev/custos/approval/programs"
)

// What the walker records for the program table (approval/programs) as
// it reads a command: findings, option values that name files, and the
// variables the line set that make a program run another.

// Find records f on the command whose operands are being read.
func (w *walker) Find(f programs.Finding) {
	if w.curCmd < 0 || w.curCmd >= len(w.a.out.Commands) {
		return
	}
	c := &w.a.out.Commands[w.curCmd]
	c.Findings = append(c.Findings, f)
}

// OptionAccess records a file the value of option opt of program names,
// with the entry and option that said so.
func (w *walker) OptionAccess(kind programs.AccessKind, a programs.Word, program, opt string, dir bool) {
	n := len(w.a.out.Files)
	if dir {
		w.Destination(a, program+" "+opt)
	} else {
		w.Access(kind, a, program+" "+opt)
	}
	for i := n; i < len(w.a.out.Files); i++ {
		w.a.out.Files[i].Program, w.a.out.Files[i].Option = program, opt
	}
}

// EnvFindings judges the variables the line set that the command finds in
// its environment (on it, for the shell running it, or earlier:
// shellstate.go) and that make p run another program.
func (w *walker) EnvFindings(p *programs.Program) {
	for _, name := range w.envNames() {
		if !p.EnvRuns(name) {
			continue
		}
		v, _ := w.envNow(name)
		origin := programs.EnvLine
		if v.wrapper {
			origin = programs.EnvWrapper
		}
		w.Find(programs.Finding{Program: p.Name(), Option: name, Words: []string{name + "="}, What: programs.WhatEnvRuns, Env: origin})
	}
}

// envNames are the names of the variables the line set that a command
// walked here finds, each once.
func (w *walker) envNames() []string {
	var names []string
	add := func(vs []envVar) {
		for _, v := range vs {
			if !slices.Contains(names, v.name) {
				names = append(names, v.name)
			}
		}
	}
	add(w.cmdEnv)
	for i := len(w.a.outer) - 1; i >= 0; i-- {
		add(w.a.outer[i])
	}
	add(w.a.exported)
	return names
}

// Unjudged records that the command being recorded runs what the program
// table has no entry for (a program, a subcommand, a module): an allow rule
// that matches it covers everything it can do, and its verdict says so.
func (w *walker) Unjudged(what string) {
	if w.curCmd >= 0 && w.curCmd < len(w.a.out.Commands) && w.a.out.Commands[w.curCmd].Unjudged == "" {
		w.a.out.Commands[w.curCmd].Unjudged = what
	}
}

// Within reads fn's operands in directory dir (tar -C): nil leaves the
// directory as it is, a dynamic word makes it unknown. The directory is
// restored afterwards: the program's -C does not change the shell's.
func (w *walker) Within(dir *programs.Word, fn func()) {
	w.scoped(func() {
		if dir != nil {
			w.cwd.cd(*dir, w.a.homeDir())
		}
		fn()
	})
}

// Canonical records the command's line without its program's global
// options (git -C . push is git push), so that rules see through them.
func (w *walker) Canonical(words []string) {
	if w.curCmd >= 0 && w.curCmd < len(w.a.out.Commands) {
		w.a.out.Commands[w.curCmd].Canonical = normaliseWords(words).Text
	}
}

// ScriptWords gives the findings of program that name no words the words
// of the script it ran: a rule names a script by quoting it whole.
func (w *walker) ScriptWords(program string, words []string) {
	if w.curCmd < 0 || w.curCmd >= len(w.a.out.Commands) {
		return
	}
	c := &w.a.out.Commands[w.curCmd]
	for i := range c.Findings {
		if c.Findings[i].Program == program && c.Findings[i].Words == nil {
			c.Findings[i].Words = words
		}
	}
}
