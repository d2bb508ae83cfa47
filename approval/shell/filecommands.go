package shell

import (
	"path"
	"slices"
	"strings"
)

// The file operands of the programs custos knows (the program table,
// programs_table.go): which of their arguments are files they read or
// write. Every other command's arguments are mentions (fileuse.go).

// operands records the file accesses of one simple command's arguments.
// args[0] is the command (wrappers already stripped).
func (w *walker) operands(args []Word) {
	if len(args) == 0 || !args[0].Static {
		return
	}
	if combos := w.substituteArgs(args); combos != nil {
		// Variables with several values (a for loop's) are alternatives,
		// not several arguments: each combination is judged on its own, so
		// that for f in a b; do sort -o $f x; done writes a and b.
		for i, c := range combos {
			w.operandsOf(c, i == 0)
		}
		return
	}
	w.operandsOf(args, true)
}

// maxArgCombos bounds the combinations substituteArgs builds.
const maxArgCombos = 16

// substituteArgs replaces dynamic arguments that tracked variables resolve
// with their values, one combination of values per result. It returns nil
// when no argument resolves. A dynamic word that brace expansion split
// into several arguments is left alone (it stays unresolved).
func (w *walker) substituteArgs(args []Word) [][]Word {
	if !w.tracking() {
		return nil
	}
	combos := [][]Word{nil}
	changed := false
	for i, a := range args {
		alts := []Word{a}
		split := (i > 0 && args[i-1].Node == a.Node) || (i+1 < len(args) && args[i+1].Node == a.Node)
		if !a.Static && !a.Pipe && a.Node != nil && !split {
			if vals, static := w.wordVars(a.Node); static && len(vals) > 0 {
				alts = alts[:0]
				for _, v := range vals {
					alts = append(alts, Word{Text: v, Static: true})
				}
				changed = true
			}
		}
		if len(combos)*len(alts) > maxArgCombos {
			return nil
		}
		next := make([][]Word, 0, len(combos)*len(alts))
		for _, c := range combos {
			for _, alt := range alts {
				next = append(next, append(append([]Word(nil), c...), alt))
			}
		}
		combos = next
	}
	if !changed {
		return nil
	}
	return combos
}

// operandsOf judges one argv with the program table; first is false for
// the second and later combinations of substituted variables, whose
// findings would repeat.
func (w *walker) operandsOf(args []Word, first bool) {
	name := path.Base(args[0].Text)
	rest := args[1:]
	p := programs[name]
	if w.curCmd >= 0 && w.curCmd < len(w.a.out.Commands) && w.a.out.Commands[w.curCmd].Foreign {
		p = nil // ./cat is not cat: its words are mentions
	}
	if p == nil {
		w.Unjudged(name)
		for _, a := range rest {
			w.Mention(a, "argument of "+name)
		}
		return
	}
	n := 0
	if w.curCmd >= 0 && w.curCmd < len(w.a.out.Commands) {
		n = len(w.a.out.Commands[w.curCmd].Findings)
	}
	w.runProgram(p, args[0].Text, rest)
	if !first && w.curCmd >= 0 && w.curCmd < len(w.a.out.Commands) {
		c := &w.a.out.Commands[w.curCmd]
		c.Findings = dedupFindings(c.Findings, n)
	}
}

// dedupFindings drops findings after index n that repeat an earlier one.
func dedupFindings(fs []Finding, n int) []Finding {
	out := fs[:n]
	for _, f := range fs[n:] {
		if !slices.ContainsFunc(out, func(g Finding) bool { return g.Program == f.Program && g.Option == f.Option && g.What == f.What }) {
			out = append(out, f)
		}
	}
	return out
}

// runProgram applies entry p to the words after the program's name.
func (w *walker) runProgram(p *program, argv0 string, rest []Word) {
	switch {
	case p.subcommands:
		w.subcommand(p, argv0, rest)
	case p.special != nil:
		w.envFindings(p)
		p.special(w, p, rest)
	default:
		w.envFindings(p)
		o := p.scanOptions(w, rest)
		p.applyOperands(w, o)
	}
}

// subcommand reads a program's global options up to its subcommand, then
// the subcommand with its own entry (git -C . log → "git log"). The
// command's canonical line leaves the global options out, so that deny and
// ask rules see through them: git -C . push is git push.
func (w *walker) subcommand(p *program, argv0 string, rest []Word) {
	var o scanned
	i := 0
	for ; i < len(rest); i++ {
		a := rest[i]
		if !a.Static {
			w.envFindings(p)
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
	if i > 0 && i < len(rest) && w.curCmd >= 0 && w.curCmd < len(w.a.out.Commands) {
		words := []string{argv0}
		for _, a := range rest[i:] {
			words = append(words, a.Text)
		}
		w.a.out.Commands[w.curCmd].Canonical = normaliseWords(words).Text
	}
	if i >= len(rest) {
		w.envFindings(p)
		return
	}
	sub := programs[p.name+" "+rest[i].Text]
	if sub == nil || sub.parent != p {
		w.envFindings(p) // a subcommand the table does not know: its words are mentions
		w.Unjudged(w.CommandName() + " " + rest[i].Text)
		for _, a := range rest[i:] {
			w.Mention(a, "argument of "+p.name)
		}
		return
	}
	w.runProgram(sub, argv0, rest[i+1:])
}

// applyOperands records what the command does to each operand: read, write
// or both by the entry's role and the options seen, the last one a
// destination for cp/mv-like commands; a script operand (sed, awk) is
// parsed for what it runs, reads and writes.
func (p *program) applyOperands(w *walker, o scanned) {
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
		case s.assigns && isAssignment(a):
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

// CommandName is the name of the command whose operands are being read.
func (w *walker) CommandName() string {
	if w.curCmd < 0 || w.curCmd >= len(w.a.out.Commands) {
		return ""
	}
	return w.a.out.Commands[w.curCmd].Name
}

// runScripts parses the scripts given to sed or awk. Several -e scripts
// are one program, joined by newlines.
func (p *program) runScripts(w *walker, scripts []Word, sandboxed bool) {
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
	if w.curCmd >= 0 && w.curCmd < len(w.a.out.Commands) {
		c := &w.a.out.Commands[w.curCmd]
		for i := range c.Findings {
			if c.Findings[i].Program == p.name && c.Findings[i].Words == nil {
				c.Findings[i].Words = words // a rule names a script by quoting it whole
			}
		}
	}
}

// isAssignment reports NAME=value (awk's command-line variable assignments).
func isAssignment(a Word) bool {
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
