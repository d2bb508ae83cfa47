package approval

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
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
}

// setVar adds possible values of name; static false makes it unknown.
func (w *walker) setVar(name string, vals []string, static bool) {
	if w.vars == nil {
		w.vars = map[string]*varState{}
	}
	st := w.vars[name]
	if st == nil {
		st = &varState{}
		w.vars[name] = st
	}
	if !static || len(st.vals)+len(vals) > maxBraceExpand {
		st.unknown, st.vals = true, nil
		return
	}
	for _, v := range vals {
		if len(v) > maxVarBytes {
			// x=$x$x doubles at every step: stop following it.
			st.unknown, st.vals = true, nil
			return
		}
	}
	if st.unknown {
		return
	}
	for _, v := range vals {
		if !contains(st.vals, v) {
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
			w.a.out.dotglob = true // a set GLOBIGNORE turns dotglob on
		}
		if a.Naked {
			if a.Value == nil {
				continue // declare X: no value given here
			}
			// declare "$x": a name built at run time.
			w.varsUnknown = true
			continue
		}
		if a.Append || a.Index != nil || a.Array != nil {
			w.setVar(a.Name.Value, nil, false)
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

// forVar records the values a for loop's variable takes.
func (w *walker) forVar(loop syntax.Loop) {
	it, ok := loop.(*syntax.WordIter)
	if !ok || it.Name == nil {
		return
	}
	if !it.InPos.IsValid() {
		w.setVar(it.Name.Value, nil, false) // for x; do …: the positional parameters
		return
	}
	var all []string
	for _, word := range it.Items {
		vals, static := w.wordVars(word)
		if !static {
			w.setVar(it.Name.Value, nil, false)
			return
		}
		all = append(all, vals...)
	}
	w.setVar(it.Name.Value, all, true)
}

// varSetters are commands that assign the variables named by their
// arguments at run time.
var varSetters = map[string]bool{"read": true, "mapfile": true, "readarray": true, "getopts": true, "printf": true, "let": true}

// commandSetsVars marks the variables a command may set as unknown.
func (w *walker) commandSetsVars(name string, rest []argWord) {
	if !varSetters[name] {
		return
	}
	for _, a := range rest {
		if !a.static {
			w.varsUnknown = true
			return
		}
		k, _, _ := strings.Cut(a.s, "=")
		if isAssignment(argWord{s: k + "=", static: true}) {
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
