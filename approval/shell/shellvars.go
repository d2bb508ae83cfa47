package shell

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/custos-dev/custos/approval/programs"
)

// Shell variables, tracked only to resolve the files a command names
// (for f in a b; do cat "$f"; done reads a and b). They never change the
// command text rules match, so an allow rule cannot be met by a value the
// variable may not hold at run time.
//
// A variable's values are the union of everything assigned to it anywhere in
// the command line (branches, functions, subshells): an over-approximation,
// so every value it may hold is judged. A variable never assigned (inherited
// from the environment) or assigned something dynamic is unknown, and so is
// every variable after eval or source.

// maxVarBytes bounds a tracked value; a longer one is unknown.
const maxVarBytes = 4096

// varState is what one variable may hold.
type varState struct {
	vals    []string
	unknown bool
	// untrusted is set when some value assigned is not known here (read,
	// a command's output, an unknown variable …): evaluated as arithmetic,
	// it may run code (arith.go). A variable may be unknown, for the
	// paths it names, and still trusted: the result of arithmetic is a
	// number.
	untrusted bool
	// avals are static values assigned that vals does not hold (array
	// elements, values assigned once the variable was unknown), kept for
	// arithmetic: vals and avals together hold every static value.
	avals []string
}

// keep adds values to avals, making the variable untrusted past the bound.
func (st *varState) keep(vals []string) {
	if st.untrusted {
		return
	}
	if len(st.avals)+len(vals) > maxBraceExpand {
		st.untrusted, st.avals = true, nil
		return
	}
	for _, v := range vals {
		if len(v) > maxVarBytes {
			st.untrusted, st.avals = true, nil
			return
		}
	}
	st.avals = append(st.avals, vals...)
}

// state returns the variable's state, creating it.
func (w *walker) state(name string) *varState {
	if w.vars == nil {
		w.vars = map[string]*varState{}
	}
	st := w.vars[name]
	if st == nil {
		st = &varState{}
		w.vars[name] = st
	}
	return st
}

// setIntVar records that name is assigned a number computed at run time
// (arithmetic, an {fd} redirection).
func (w *walker) setIntVar(name string) {
	w.noteVar(name, nil, false) // the environment too, if name is exported (shellstate.go)
	st := w.state(name)
	st.keep(st.vals)
	st.unknown, st.vals = true, nil
}

// setElems records values assigned to array elements: the variable's
// paths become unknown, its values are kept for arithmetic.
func (w *walker) setElems(name string, vals []string, static bool) {
	st := w.state(name)
	st.keep(st.vals)
	st.unknown, st.vals = true, nil
	if !static {
		st.untrusted, st.avals = true, nil
		return
	}
	st.keep(vals)
}

// setVar adds possible values of name; static false makes it unknown.
func (w *walker) setVar(name string, vals []string, static bool) {
	st := w.state(name)
	if !static || len(st.vals)+len(vals) > maxBraceExpand {
		st.unknown, st.vals, st.untrusted = true, nil, true
		return
	}
	for _, v := range vals {
		if len(v) > maxVarBytes {
			// x=$x$x doubles at every step: stop following it.
			st.unknown, st.vals, st.untrusted = true, nil, true
			return
		}
	}
	if st.unknown {
		st.keep(vals)
		return
	}
	for _, v := range vals {
		if !slices.Contains(st.vals, v) {
			st.vals = append(st.vals, v)
		}
	}
}

// lookupVar returns the possible values of a plain $name / ${name}.
func (w *walker) lookupVar(p *syntax.ParamExp) ([]string, bool) {
	if !w.substVars || w.varsUnknown || p.Param == nil {
		return nil, false
	}
	if p.Excl || p.Length || p.Width || p.IsSet || p.Index != nil || p.Slice != nil ||
		p.Repl != nil || p.Names != 0 || p.Exp != nil || p.NestedParam != nil || p.Flags != nil {
		return nil, false
	}
	st := w.vars[p.Param.Value]
	if st == nil || st.unknown || len(st.vals) == 0 {
		return nil, false
	}
	return st.vals, true
}

// assigns records NAME=value assignments (of a statement, declare, export …).
func (w *walker) assigns(as []*syntax.Assign) {
	for _, a := range as {
		if a.Name == nil {
			continue
		}
		if a.Name.Value == "GLOBIGNORE" {
			w.a.out.DotGlob = true // a set GLOBIGNORE turns dotglob on
		}
		if a.Naked {
			if a.Value == nil {
				continue // declare X: no value given here
			}
			// declare "$x": a name built at run time.
			w.varsUnknown = true
			continue
		}
		if a.Append {
			w.setVar(a.Name.Value, nil, false)
			continue
		}
		if a.Index != nil || a.Array != nil {
			w.elems(a)
			continue
		}
		if isIntWord(a.Value) {
			w.setIntVar(a.Name.Value) // i=$((i+1))
			continue
		}
		var vals []string
		static := true
		if a.Value != nil {
			vals, static = w.wordVars(a.Value)
		} else {
			vals = []string{""}
		}
		w.setVar(a.Name.Value, vals, static)
	}
}

// elems records an assignment to array elements: a[i]=v or a=(v …).
func (w *walker) elems(a *syntax.Assign) {
	var all []string
	static := true
	add := func(word *syntax.Word) {
		if word == nil {
			all = append(all, "")
			return
		}
		vals, st := w.wordVars(word)
		static = static && st
		all = append(all, vals...)
	}
	if a.Array != nil {
		for _, e := range a.Array.Elems {
			add(e.Value)
		}
	} else {
		add(a.Value)
	}
	w.setElems(a.Name.Value, all, static)
}

// isIntWord reports a word whose value is a number computed at run time:
// arithmetic expansions and digits only.
func isIntWord(word *syntax.Word) bool {
	if word == nil || len(word.Parts) == 0 {
		return false
	}
	arith := false
	for _, p := range word.Parts {
		switch x := p.(type) {
		case *syntax.ArithmExp:
			arith = true
		case *syntax.Lit:
			for i := 0; i < len(x.Value); i++ {
				if x.Value[i] < '0' || x.Value[i] > '9' {
					return false
				}
			}
		default:
			return false
		}
	}
	return arith
}

// forVar records the values a for loop's variable takes.
func (w *walker) forVar(loop syntax.Loop) {
	it, ok := loop.(*syntax.WordIter)
	if !ok || it.Name == nil {
		return
	}
	if !it.InPos.IsValid() {
		w.setVar(it.Name.Value, nil, false) // for x; do …: the positional parameters
		w.noteVar(it.Name.Value, nil, false)
		return
	}
	var all []string
	for _, word := range it.Items {
		vals, static := w.wordVars(word)
		if !static {
			w.setVar(it.Name.Value, nil, false)
			w.noteVar(it.Name.Value, nil, false)
			return
		}
		all = append(all, vals...)
	}
	w.setVar(it.Name.Value, all, true)
	w.noteVar(it.Name.Value, all, true)
}

// varSetters are commands that assign the variables named by their
// arguments at run time.
var varSetters = map[string]bool{"read": true, "mapfile": true, "readarray": true, "getopts": true, "printf": true, "let": true}

// commandSetsVars marks the variables a command may set as unknown.
func (w *walker) commandSetsVars(name string, rest []programs.Word) {
	if !varSetters[name] {
		return
	}
	for _, a := range rest {
		if !a.Static {
			w.varsUnknown = true
			return
		}
		k, _, _ := strings.Cut(a.Text, "=")
		if programs.IsAssignment(programs.Word{Text: k + "=", Static: true}) {
			w.setVar(k, nil, false)
		}
	}
}

// tracking reports whether any variable is followed: without one,
// substituting would change nothing.
func (w *walker) tracking() bool { return len(w.vars) > 0 && !w.varsUnknown }

// wordVars evaluates a word with the tracked variables substituted.
func (w *walker) wordVars(word *syntax.Word) ([]string, bool) {
	old := w.substVars
	w.substVars = true
	defer func() { w.substVars = old }()
	return w.word(word)
}
