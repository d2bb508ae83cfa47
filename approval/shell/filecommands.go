package shell

import (
	"path"
	"slices"

	"github.com/custos-dev/custos/approval/programs"
)

// The file operands of the programs custos knows (the program table,
// approval/programs): which of their arguments are files they read or
// write. Every other command's arguments are mentions (fileuse.go).

// operands records the file accesses of one simple command's arguments.
// args[0] is the command (wrappers already stripped).
func (w *walker) operands(args []programs.Word) {
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
func (w *walker) substituteArgs(args []programs.Word) [][]programs.Word {
	if !w.tracking() {
		return nil
	}
	combos := [][]programs.Word{nil}
	changed := false
	for i, a := range args {
		alts := []programs.Word{a}
		split := (i > 0 && args[i-1].Node == a.Node) || (i+1 < len(args) && args[i+1].Node == a.Node)
		if !a.Static && !a.Pipe && a.Node != nil && !split {
			if vals, static := w.wordVars(a.Node); static && len(vals) > 0 {
				alts = alts[:0]
				for _, v := range vals {
					alts = append(alts, programs.Word{Text: v, Static: true})
				}
				changed = true
			}
		}
		if len(combos)*len(alts) > maxArgCombos {
			return nil
		}
		next := make([][]programs.Word, 0, len(combos)*len(alts))
		for _, c := range combos {
			for _, alt := range alts {
				next = append(next, append(append([]programs.Word(nil), c...), alt))
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
func (w *walker) operandsOf(args []programs.Word, first bool) {
	name := path.Base(args[0].Text)
	rest := args[1:]
	p := programs.Lookup(name)
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
	p.Read(w, args[0].Text, rest)
	if !first && w.curCmd >= 0 && w.curCmd < len(w.a.out.Commands) {
		c := &w.a.out.Commands[w.curCmd]
		c.Findings = dedupFindings(c.Findings, n)
	}
}

// dedupFindings drops findings after index n that repeat an earlier one.
func dedupFindings(fs []programs.Finding, n int) []programs.Finding {
	out := fs[:n]
	for _, f := range fs[n:] {
		if !slices.ContainsFunc(out, func(g programs.Finding) bool {
			return g.Program == f.Program && g.Option == f.Option && g.What == f.What
		}) {
			out = append(out, f)
		}
	}
	return out
}

// CommandName is the name of the command whose operands are being read.
func (w *walker) CommandName() string {
	if w.curCmd < 0 || w.curCmd >= len(w.a.out.Commands) {
		return ""
	}
	return w.a.out.Commands[w.curCmd].Name
}
