package programs

import (
	"path"
	"strings"
)

// How an entry reads a command: its options, then its operands or its
// subcommand, and the scripts it is given.

// Read applies entry p to the words after the program's name, recording
// on w what the command does; argv0 is the program's own word.
func (p *Program) Read(w Walker, argv0 string, rest []Word) {
	switch {
	case p.subcommands:
		p.subcommand(w, argv0, rest)
	case p.special != nil:
		w.EnvFindings(p)
		p.special(w, p, rest)
	default:
		w.EnvFindings(p)
		o := p.scanOptions(w, rest)
		p.applyOperands(w, o)
	}
}

// subcommand reads a program's global options up to its subcommand, then
// the subcommand with its own entry (git -C . log → "git log"). The
// command's canonical line leaves the global options out, so that deny and
// ask rules see through them: git -C . push is git push.
func (p *Program) subcommand(w Walker, argv0 string, rest []Word) {
	var o scanned
	i := 0
	for ; i < len(rest); i++ {
		a := rest[i]
		if !a.Static {
			w.EnvFindings(p)
			w.Find(Finding{Program: p.name, Option: a.Text, Words: []string{a.Text}, What: "is built at run time: the subcommand cannot be told"})
			return
		}
		if a.Text == "--" || !strings.HasPrefix(a.Text, "-") && !strings.HasPrefix(a.Text, "+") {
			break
		}
		switch {
		case strings.HasPrefix(a.Text, "+"):
			w.Find(Finding{Program: p.name, Option: a.Text, Words: []string{a.Text}, What: "selects another toolchain"})
		case strings.HasPrefix(a.Text, "--") || p.singleDash:
			i = p.scanLong(w, &o, rest, i)
		default:
			i = p.scanCluster(w, &o, rest, i)
		}
	}
	if i < len(rest) && rest[i].Text == "--" {
		i++
	}
	if i > 0 && i < len(rest) {
		words := []string{argv0}
		for _, a := range rest[i:] {
			words = append(words, a.Text)
		}
		w.Canonical(words)
	}
	if i >= len(rest) {
		w.EnvFindings(p)
		return
	}
	sub := byName[p.name+" "+rest[i].Text]
	if sub == nil || sub.parent != p {
		w.EnvFindings(p) // a subcommand the table does not know: its words are mentions
		w.Unjudged(w.CommandName() + " " + rest[i].Text)
		for _, a := range rest[i:] {
			w.Mention(a, "argument of "+p.name)
		}
		return
	}
	sub.Read(w, argv0, rest[i+1:])
}

// applyOperands records what the command does to each operand: read, write
// or both by the entry's role and the options seen, the last one a
// destination for cp/mv-like commands; a script operand (sed, awk) is
// parsed for what it runs, reads and writes.
func (p *Program) applyOperands(w Walker, o scanned) {
	s := &p.operands
	ops := o.ops
	if p.script != nil {
		scripts := o.scripts
		if !o.hasLeadOpt && len(ops) > 0 {
			scripts = ops[:1]
		}
		p.runScripts(w, scripts, o.sandboxed)
	}
	if s.lead > 0 && !o.hasLeadOpt {
		ops = ops[min(s.lead, len(ops)):]
	}
	srcRole := s.role
	if o.readOps {
		srcRole = roleRead
	}
	if o.inPlace && srcRole == roleRead {
		srcRole = roleReadWrite
	}
	if o.toStdout && srcRole == roleReadWrite {
		srcRole = roleRead
	}
	name := w.CommandName()
	if name == "" {
		name = path.Base(p.name)
	}
	via := name + " operand"
	if o.inPlace {
		via = name + " in place"
	}
	for i, a := range ops {
		r := srcRole
		switch {
		case s.assigns && IsAssignment(a):
			continue
		case s.lastDest && !o.targetDir && len(ops) >= 2 && i == len(ops)-1:
			w.Destination(a, name+" destination")
			continue
		case s.lastDest && len(ops) == 1 && name == "ln":
			// ln -s TARGET: the link is made in the current directory.
			w.Access(AccessRead, a, "ln operand")
			if a.Static {
				w.Access(AccessWrite, Word{Text: path.Base(a.Text), Static: true}, "ln destination")
			}
			continue
		case s.secondOut && i == 1:
			w.Access(AccessWrite, a, name+" output")
			continue
		case s.sourcesRW && len(ops) >= 2:
			r = roleReadWrite
		}
		if r == roleMention {
			w.Mention(a, "argument of "+name)
			continue
		}
		w.Access(r.kind(), a, via)
	}
}

// runScripts parses the scripts given to sed or awk. Several -e scripts
// are one program, joined by newlines.
func (p *Program) runScripts(w Walker, scripts []Word, sandboxed bool) {
	var parts []string
	for _, s := range scripts {
		if !s.Static {
			w.Find(Finding{Program: p.name, Option: "script", Words: []string{s.Text}, What: "is built at run time: " + whatScript})
			return
		}
		parts = append(parts, s.Text)
	}
	if len(parts) == 0 {
		return
	}
	words := make([]string, len(parts))
	copy(words, parts)
	p.script(w, p, Word{Text: strings.Join(parts, "\n"), Static: true}, sandboxed)
	w.ScriptWords(p.name, words)
}

// IsAssignment reports NAME=value (awk's command-line variable assignments).
func IsAssignment(a Word) bool {
	k, _, ok := strings.Cut(a.Text, "=")
	if !ok || k == "" || !a.Static {
		return false
	}
	for i, c := range k {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
