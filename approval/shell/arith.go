package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/custos-dev/custos/approval/programs"
)

// Code hidden in words that look like data: an allow rule for the outer
// command must not cover what bash runs from inside its arguments.
//
// Bash evaluates arithmetic in $((…)), $[…], ((…)), let, for ((…;…;…)), the
// operands of [[ … -eq … ]] (-ne -lt -le -gt -ge), array subscripts
// (${a[i]}, a[i]=v, a=([i]=v)), the offset and length of ${x:o:l}, and every
// value assigned to a declare -i variable. It evaluates the subscript of a
// variable name given to test -v, [ -v ], [[ -v ]], printf -v, read, unset,
// declare/typeset/local/export/readonly, a {fd} redirection and ${!name}.
// Evaluating arithmetic evaluates the values of the variables it names,
// recursively, and a subscript anywhere in that text is expanded as a word
// first: echo $[ x='a[$(touch FLAG)]', x ] runs touch, and so does
// test -v 'a[$(touch FLAG)]'. The walker sees no command substitution there:
// it is in single quotes, or in a variable's value.
//
// What this file decides:
//   - Arithmetic written as literals (digits, operators, names of variables
//     whose every value custos knows is safe arithmetic) stays as it is:
//     echo $((1+2)), i=0; echo $((i+1)), for ((i=0; i<3; i++)).
//   - Arithmetic text with $, `, quotes, backslashes or anything else that is
//     not plain arithmetic is hidden code: the commands in it are parsed
//     and judged like any other (so deny rules apply to them), and the
//     command line is undecidable (it asks), whatever allow rules say.
//   - A variable named in arithmetic (x, $x, a[x]) must hold only values
//     known here: assigned in the command line to static text that is itself
//     safe arithmetic, or the result of arithmetic. One inherited from the
//     environment, a positional parameter, one read from input or a
//     command's output, or any variable after eval or source, asks: custos
//     cannot tell what bash will evaluate. Variables are judged once the
//     whole command line was walked, against every value they may hold
//     anywhere in it (shellvars.go), so order and loops cannot hide a value.
//   - A variable name built at run time (read "$n", printf -v "$n", ${!n}
//     with n unknown) asks; declare -n (a name reference) always asks.
//   - Subscripts of associative arrays are not arithmetic, but custos does
//     not track which arrays are associative: they are judged as indexed
//     (conservative: ${map[$key]} asks).

// arithRef is a variable whose values bash will evaluate.
type arithRef struct {
	name string
	kind arithRefKind
	src  string // where it is evaluated, for the reason
}

type arithRefKind uint8

const (
	refValue  arithRefKind = iota // its values are evaluated as arithmetic
	refInt                        // declare -i: the values assigned to it are
	refName                       // its values are variable names (${!x}, read "$x")
	refPrompt                     // its values are expanded as a prompt (${x@P})
)

// bashIntVars are variables bash itself keeps as numbers.
var bashIntVars = map[string]bool{
	"RANDOM": true, "SRANDOM": true, "SECONDS": true, "LINENO": true, "BASHPID": true,
	"PPID": true, "UID": true, "EUID": true, "EPOCHSECONDS": true,
}

// maxArithDepth bounds how far variable values are followed.
const maxArithDepth = 8

// arithNode judges the arithmetic and variable names of one syntax node met
// while walking (nested). The command substitutions below it are walked by
// the caller; nothing here walks or expands words (that would revisit
// every nested node at every level).
func (w *walker) arithNode(node syntax.Node) {
	switch x := node.(type) {
	case *syntax.ArithmExp:
		w.arithExpr(x.X)
	case *syntax.ArithmCmd:
		w.arithExpr(x.X)
	case *syntax.LetClause:
		for _, e := range x.Exprs {
			w.arithExpr(e)
		}
	case *syntax.CStyleLoop:
		w.arithExpr(x.Init)
		w.arithExpr(x.Cond)
		w.arithExpr(x.Post)
	case *syntax.ParamExp:
		w.arithParamExp(x)
	case *syntax.Assign:
		if x.Index != nil {
			w.arithExpr(x.Index)
		}
		if x.Array != nil {
			for _, e := range x.Array.Elems {
				if e.Index != nil {
					w.arithExpr(e.Index)
				}
			}
		}
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			if word, ok := x.X.(*syntax.Word); ok {
				w.arithWord(word)
			}
			if word, ok := x.Y.(*syntax.Word); ok {
				w.arithWord(word)
			}
		}
	case *syntax.UnaryTest:
		if word, ok := x.X.(*syntax.Word); ok && x.Op == syntax.TsVarSet {
			w.nameWord(word, "[[ -v ]]")
		}
	case *syntax.DeclClause:
		w.declClause(x)
	}
}

// arithParamExp judges the arithmetic of a parameter expansion: its
// subscript, its offset and length, and indirection.
func (w *walker) arithParamExp(p *syntax.ParamExp) {
	if p.Index != nil && !isAtStar(p.Index) {
		w.arithExpr(p.Index)
	}
	if p.Slice != nil {
		w.arithExpr(p.Slice.Offset)
		w.arithExpr(p.Slice.Length)
	}
	if p.Param == nil {
		return
	}
	if p.Excl && p.Names == 0 && (p.Index == nil || !isAtStar(p.Index)) && !specialParam(p.Param.Value) {
		// ${!x}: the value of x is a name, and its subscript is evaluated.
		w.addRef(p.Param.Value, refName, p)
	}
	if p.Exp != nil && (p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull) {
		w.setVar(p.Param.Value, nil, false) // ${x:=…} assigns x
		w.noteVar(p.Param.Value, nil, false)
	}
	if p.Exp != nil && p.Exp.Op == syntax.OtherParamOps && strings.Contains(lit(p.Exp.Word), "P") {
		w.addRef(p.Param.Value, refPrompt, p) // ${x@P} runs $(…) in the value
	}
}

func isAtStar(e syntax.ArithmExpr) bool {
	word, ok := e.(*syntax.Word)
	if !ok || len(word.Parts) != 1 {
		return false
	}
	lit, ok := word.Parts[0].(*syntax.Lit)
	return ok && (lit.Value == "@" || lit.Value == "*")
}

// specialParam reports $#, $?, $$, $!, $-, $@, $*: bash's own parameters.
func specialParam(name string) bool {
	return len(name) == 1 && strings.Contains("#?$!-@*", name)
}

// arithExpr judges one arithmetic expression.
func (w *walker) arithExpr(e syntax.ArithmExpr) {
	switch x := e.(type) {
	case nil:
	case *syntax.BinaryArithm:
		if isArithAssign(x.Op) {
			w.arithTarget(x.X, x.Op != syntax.Assgn)
		} else {
			w.arithExpr(x.X)
		}
		w.arithExpr(x.Y)
	case *syntax.UnaryArithm:
		if x.Op == syntax.Inc || x.Op == syntax.Dec {
			w.arithTarget(x.X, true)
		} else {
			w.arithExpr(x.X)
		}
	case *syntax.ParenArithm:
		w.arithExpr(x.X)
	case *syntax.Word:
		w.arithWord(x)
	}
}

func isArithAssign(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
		syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn,
		syntax.ShrAssgn, syntax.AndBoolAssgn, syntax.OrBoolAssgn, syntax.XorBoolAssgn, syntax.PowAssgn:
		return true
	}
	return false
}

// arithTarget is the variable an arithmetic assignment sets: it holds a
// number afterwards; reads is set when its old value is evaluated too
// (x+=1, x++).
func (w *walker) arithTarget(e syntax.ArithmExpr, reads bool) {
	word, ok := e.(*syntax.Word)
	if ok && len(word.Parts) == 1 {
		name := ""
		switch p := word.Parts[0].(type) {
		case *syntax.Lit:
			if isIdent(p.Value) {
				name = p.Value
			}
		case *syntax.ParamExp:
			if !p.Dollar.IsValid() && p.Param != nil {
				name = p.Param.Value // a[i]=…: the subscript is judged with the ParamExp
			}
		}
		if name != "" {
			if reads {
				w.addRef(name, refValue, word)
			}
			w.setIntVar(name)
			return
		}
	}
	w.arithExpr(e)
}

// arithWord judges one word bash evaluates as arithmetic, after expanding it.
func (w *walker) arithWord(word *syntax.Word) {
	if word == nil || len(word.Parts) == 0 {
		return
	}
	if len(word.Parts) == 1 {
		switch p := word.Parts[0].(type) {
		case *syntax.Lit:
			w.arithText(p.Value, word)
			return
		case *syntax.ParamExp:
			if w.arithParam(p) {
				return
			}
		case *syntax.DblQuoted:
			if len(p.Parts) == 1 {
				if pe, ok := p.Parts[0].(*syntax.ParamExp); ok && w.arithParam(pe) {
					return
				}
			}
		}
	}
	texts, ok := w.arithTexts(word.Parts)
	if !ok {
		w.a.undecidable("bash evaluates " + Excerpt(w.source(word)) + " as arithmetic, and its value is not known: code hidden in it would run")
		return
	}
	for _, t := range texts {
		w.arithText(t, word)
	}
}

// arithParam judges a word that is one parameter: a name evaluated (x,
// a[i]) or expanded ($x, ${a[i]}, ${#x}). It reports false when the
// expansion is not one it reads.
func (w *walker) arithParam(p *syntax.ParamExp) bool {
	if p.Param == nil {
		return false
	}
	if p.Length && !p.Excl && p.Slice == nil && p.Repl == nil && p.Exp == nil {
		return true // ${#x}, ${#a[@]}: a number (a subscript is judged on its own)
	}
	if p.Excl || p.Width || p.IsSet || p.Slice != nil || p.Repl != nil || p.Names != 0 ||
		p.Exp != nil || p.NestedParam != nil || p.Flags != nil || p.Length {
		return false
	}
	name := p.Param.Value
	if specialParam(name) {
		return name == "#" || name == "?" || name == "$" || name == "!"
	}
	w.addRef(name, refValue, p)
	return true
}

// arithTexts expands word parts into the texts bash would evaluate, using the
// variables known so far; false when a part is not known.
func (w *walker) arithTexts(parts []syntax.WordPart) ([]string, bool) {
	out := []string{""}
	for _, p := range parts {
		var alts []string
		switch x := p.(type) {
		case *syntax.Lit:
			alts = []string{x.Value}
		case *syntax.SglQuoted:
			if x.Dollar {
				return nil, false
			}
			alts = []string{x.Value}
		case *syntax.DblQuoted:
			sub, ok := w.arithTexts(x.Parts)
			if !ok {
				return nil, false
			}
			alts = sub
		case *syntax.ArithmExp:
			alts = []string{"0"} // a number; judged on its own
		case *syntax.ParamExp:
			switch {
			case x.Param == nil:
				return nil, false
			case x.Length && x.Index == nil:
				alts = []string{"0"}
			case x.Param.Value == "#" || x.Param.Value == "?" || x.Param.Value == "$" || x.Param.Value == "!":
				alts = []string{"0"}
			default:
				st := w.vars[x.Param.Value]
				if w.varsUnknown || st == nil || st.unknown || len(st.vals) == 0 || x.Index != nil ||
					x.Excl || x.Slice != nil || x.Repl != nil || x.Exp != nil || x.Names != 0 || x.Flags != nil || x.NestedParam != nil {
					return nil, false
				}
				alts = st.vals
			}
		default:
			return nil, false // command substitution, extended glob, …
		}
		if len(out)*len(alts) > maxBraceExpand {
			return nil, false
		}
		next := make([]string, 0, len(out)*len(alts))
		for _, o := range out {
			for _, a := range alts {
				next = append(next, o+a)
			}
		}
		out = next
	}
	return out, true
}

// arithText judges a text bash evaluates as arithmetic.
func (w *walker) arithText(s string, where syntax.Node) {
	refs, targets, ok := scanArith(s)
	if !ok {
		w.hidden(s)
		return
	}
	for _, r := range refs {
		w.addRef(r, refValue, where)
	}
	for _, t := range targets {
		w.setIntVar(t)
	}
}

// hidden reports text bash evaluates that is not plain arithmetic, and has
// the commands in it judged.
func (w *walker) hidden(s string) { w.hiddenAs(s, "as arithmetic") }

// hiddenAs is hidden for text bash evaluates in another way (how: "as a
// prompt"), named in the reason.
func (w *walker) hiddenAs(s, how string) {
	if !strings.ContainsAny(s, "$`") {
		w.a.undecidable("bash evaluates " + Excerpt(s) + " " + how + ", and custos cannot read it")
		return
	}
	w.a.undecidable("bash evaluates " + Excerpt(s) + " " + how + ": code in it runs")
	if w.depth+1 > maxShellDepth {
		w.a.undecidable("shell nesting is too deep to analyse")
		return
	}
	// A subscript is expanded like a here-document: $(…), `…` and ${…}
	// inside quotes run too. Judge those commands, so deny rules see them.
	word, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Document(strings.NewReader(s))
	if err != nil || word == nil {
		return
	}
	sub := &walker{a: w.a, src: s, depth: w.depth + 1, cwd: w.cwd.clone(), curCmd: -1}
	sub.wordNested(word, 0)
	sub.finishArith()
}

// scanArith reads an arithmetic text: the variables it evaluates (refs) and
// the ones it assigns (targets). ok is false when the text holds anything
// but numbers, names, operators and subscripts: bash would expand it.
func scanArith(s string) (refs, targets []string, ok bool) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			for i < len(s) && (isIdentByte(s[i]) || s[i] == '#' || s[i] == '@') {
				i++ // 42, 0x2a, 16#2a, 64#_@
			}
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(s) && isIdentByte(s[j]) {
				j++
			}
			if assignedAt(s, j) {
				targets = append(targets, s[i:j])
			} else {
				refs = append(refs, s[i:j])
			}
			i = j
		case strings.IndexByte(" \t\n+-*/%<>=!&|^~?:,()[]", c) >= 0:
			i++
		default:
			return nil, nil, false
		}
	}
	return refs, targets, true
}

// assignedAt reports whether the name ending at j is assigned (x=…, a[i]=…).
func assignedAt(s string, j int) bool {
	if j < len(s) && s[j] == '[' {
		depth := 0
		for ; j < len(s); j++ {
			if s[j] == '[' {
				depth++
			} else if s[j] == ']' {
				if depth--; depth == 0 {
					break
				}
			}
		}
		if j >= len(s) {
			return false
		}
		j++
	}
	for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n') {
		j++
	}
	return j < len(s) && s[j] == '=' && (j+1 == len(s) || s[j+1] != '=')
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return false
		}
	}
	return true
}

// nameText judges a variable name bash is given as text (read 'a[i]'):
// its subscript is evaluated.
func (w *walker) nameText(s string, where syntax.Node) {
	k := strings.IndexByte(s, '[')
	if k < 0 {
		return
	}
	refs, _, ok := scanArith(s[k:])
	if !ok {
		w.hidden(s)
		return
	}
	for _, r := range refs {
		w.addRef(r, refValue, where)
	}
}

// nameWord judges a word that bash takes as a variable name.
func (w *walker) nameWord(word *syntax.Word, cmd string) {
	if word == nil {
		return
	}
	vals, static := w.word(word)
	w.nameArg(programs.Word{Text: w.source(word), Static: static, Node: word}, vals, cmd)
}

// nameArg judges one argument bash takes as a variable name; vals are its
// values when static.
func (w *walker) nameArg(a programs.Word, vals []string, cmd string) {
	if a.Static {
		for _, v := range vals {
			w.nameText(v, a.Node)
		}
		return
	}
	if a.Node != nil && len(a.Node.Parts) == 1 {
		p, _ := a.Node.Parts[0].(*syntax.ParamExp)
		if dq, ok := a.Node.Parts[0].(*syntax.DblQuoted); ok && len(dq.Parts) == 1 {
			p, _ = dq.Parts[0].(*syntax.ParamExp)
		}
		if p != nil && p.Param != nil && w.arithParamPlain(p) {
			w.addRef(p.Param.Value, refName, p)
			return
		}
	}
	src := a.Text
	if a.Node != nil {
		src = w.source(a.Node)
	}
	w.a.undecidable(cmd + " is given a variable name built at run time (" + Excerpt(src) + "): bash evaluates code in its subscript")
}

// arithParamPlain reports a plain $x / ${x}.
func (w *walker) arithParamPlain(p *syntax.ParamExp) bool {
	return !(p.Excl || p.Length || p.Width || p.IsSet || p.Index != nil || p.Slice != nil || p.Repl != nil ||
		p.Names != 0 || p.Exp != nil || p.NestedParam != nil || p.Flags != nil) && !specialParam(p.Param.Value)
}

// argVals are the values of a static argument, for nameArg.
func argVals(a programs.Word) []string { return []string{a.Text} }

// builtinNames judges the builtins that take variable names or arithmetic as
// arguments, run as simple commands (also behind builtin or command).
func (w *walker) builtinNames(name string, rest []programs.Word) {
	switch name {
	case "test", "[":
		for i, a := range rest {
			if a.Static && a.Text == "-v" && i+1 < len(rest) {
				w.nameArg(rest[i+1], argVals(rest[i+1]), name+" -v")
			}
		}
	case "printf":
		if len(rest) > 0 && rest[0].Static && strings.HasPrefix(rest[0].Text, "-v") {
			if rest[0].Text == "-v" && len(rest) > 1 {
				w.nameArg(rest[1], argVals(rest[1]), "printf -v")
			} else if rest[0].Text != "-v" {
				w.nameText(rest[0].Text[2:], rest[0].Node)
			}
		}
	case "read":
		for i := 0; i < len(rest); i++ {
			a := rest[i]
			if a.Static && a.Text == "--" {
				for _, op := range rest[i+1:] {
					w.nameArg(op, argVals(op), "read")
				}
				return
			}
			if a.Static && strings.HasPrefix(a.Text, "-") && len(a.Text) > 1 {
				if k := strings.IndexAny(a.Text[1:], "adinNptu"); k >= 0 && k+2 == len(a.Text) {
					i++ // the option's value is the next word
				}
				continue
			}
			w.nameArg(a, argVals(a), "read")
		}
	case "unset":
		for _, a := range rest {
			if a.Static && strings.HasPrefix(a.Text, "-") {
				if strings.Contains(a.Text, "f") {
					return // functions
				}
				continue
			}
			w.nameArg(a, argVals(a), "unset")
		}
	case "let":
		for _, a := range rest {
			if a.Static {
				w.arithText(a.Text, a.Node)
			} else if a.Node != nil {
				w.arithWord(a.Node)
			}
		}
	case "declare", "typeset", "local", "export", "readonly":
		w.declWords(name, rest)
	case "compgen":
		w.compgen(rest)
	}
}

// compgen judges compgen's options that run code now: -W's word list is
// expanded (command substitutions in it run), -C runs a command, -F a
// function.
func (w *walker) compgen(rest []programs.Word) {
	for i, a := range rest {
		if !a.Static || !strings.HasPrefix(a.Text, "-") || a.Text == "--" {
			continue
		}
		switch {
		case strings.ContainsAny(a.Text, "CF"):
			w.a.undecidable("compgen " + a.Text + " runs a command or function custos does not read")
		case strings.HasSuffix(a.Text, "W") && i+1 < len(rest):
			if v := rest[i+1]; !v.Static {
				w.a.undecidable("compgen -W expands a word list built at run time: command substitutions in it run")
			} else if strings.ContainsAny(v.Text, "$`") {
				w.hidden(v.Text)
			}
		}
	}
}

// declWords judges declare's arguments given as words (builtin declare …;
// declare itself is a DeclClause).
func (w *walker) declWords(name string, rest []programs.Word) {
	intAttr := false
	for _, a := range rest {
		if a.Static && (strings.HasPrefix(a.Text, "-") || strings.HasPrefix(a.Text, "+")) {
			if strings.Contains(a.Text, "n") {
				w.a.undecidable(name + " -n makes a name reference: bash evaluates code in the subscript it refers to")
			}
			intAttr = intAttr || strings.Contains(a.Text, "i")
		}
	}
	for _, a := range rest {
		if a.Static && (strings.HasPrefix(a.Text, "-") || strings.HasPrefix(a.Text, "+")) {
			continue
		}
		if !a.Static {
			w.nameArg(a, nil, name)
			continue
		}
		w.declText(a.Text, intAttr, a.Node)
	}
}

// declText judges one static NAME[=value] argument of declare.
func (w *walker) declText(s string, intAttr bool, where syntax.Node) {
	k, v, hasV := strings.Cut(s, "=")
	k = strings.TrimSuffix(k, "+")
	w.nameText(k, where)
	if intAttr {
		if hasV {
			w.arithText(v, where)
		}
		if i := strings.IndexByte(k, '['); i >= 0 {
			k = k[:i]
		}
		w.addRef(k, refInt, where)
	}
}

// declClause judges a declare/typeset/local/export/readonly clause.
func (w *walker) declClause(c *syntax.DeclClause) {
	variant := "declare"
	if c.Variant != nil {
		variant = c.Variant.Value
	}
	// The words given without NAME=: options, names, NAME=value in quotes.
	naked := make([][]string, len(c.Args))
	intAttr := false
	for i, a := range c.Args {
		if !a.Naked || a.Name != nil || a.Value == nil {
			continue
		}
		vals, static := w.word(a.Value)
		if !static {
			w.nameArg(programs.Word{Text: w.source(a.Value), Node: a.Value}, nil, variant)
			continue
		}
		naked[i] = vals
		for _, v := range vals {
			if strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+") {
				if strings.Contains(v, "n") {
					w.a.undecidable(variant + " -n makes a name reference: bash evaluates code in the subscript it refers to")
				}
				intAttr = intAttr || strings.Contains(v, "i")
			}
		}
	}
	for i, a := range c.Args {
		for _, v := range naked[i] {
			if !strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "+") {
				w.declText(v, intAttr, a.Value)
			}
		}
		if a.Name == nil || !intAttr {
			continue
		}
		if a.Value != nil {
			w.arithWord(a.Value)
		}
		if a.Array != nil {
			for _, e := range a.Array.Elems {
				if e.Value != nil {
					w.arithWord(e.Value)
				}
			}
		}
		w.addRef(a.Name.Value, refInt, a)
	}
}

// addRef records a variable whose values bash evaluates; it is judged when
// the walk ends (finishArith).
func (w *walker) addRef(name string, kind arithRefKind, where syntax.Node) {
	src := ""
	if where != nil {
		src = w.source(where)
	}
	w.arithRefs = append(w.arithRefs, arithRef{name: name, kind: kind, src: src})
}

// finishArith judges the variables bash evaluates against every value they
// may hold in the whole command line.
func (w *walker) finishArith() {
	if len(w.arithRefs) == 0 {
		return
	}
	memo := map[string]bool{}
	for _, r := range w.arithRefs {
		switch r.kind {
		case refValue:
			if !w.arithSafeVar(r.name, memo, 0) {
				w.a.undecidable("bash evaluates the value of $" + r.name + " as arithmetic (in " + Excerpt(r.src) +
					") and custos does not know it is a number: code hidden in it would run")
			}
		case refInt:
			if (w.varsUnknown || w.vars[r.name] != nil) && !w.arithSafeVar(r.name, memo, 0) {
				w.a.undecidable("declare -i " + r.name + " makes bash evaluate what is assigned to it, and custos does not know it is a number")
			}
		case refPrompt:
			if !w.promptSafeVar(r.name) {
				w.a.undecidable("bash expands the value of $" + r.name + " as a prompt (in " + Excerpt(r.src) +
					"), running the command substitutions in it, and custos does not know that value")
			}
		case refName:
			if !w.nameSafeVar(r.name, memo) {
				w.a.undecidable("bash takes the value of $" + r.name + " as a variable name (in " + Excerpt(r.src) +
					") and evaluates its subscript, and custos does not know that value")
			}
		}
	}
	w.arithRefs = nil
}

// arithSafeVar reports whether evaluating the variable as arithmetic cannot
// run code: every value it may hold is known and safe arithmetic.
func (w *walker) arithSafeVar(name string, memo map[string]bool, depth int) bool {
	if v, ok := memo[name]; ok {
		return v
	}
	memo[name] = true // a cycle adds no value that is not checked here
	ok := w.arithSafeVarUncached(name, memo, depth)
	memo[name] = ok
	return ok
}

func (w *walker) arithSafeVarUncached(name string, memo map[string]bool, depth int) bool {
	st := w.vars[name]
	if st == nil {
		return bashIntVars[name] && !w.varsUnknown
	}
	if w.varsUnknown || st.untrusted || depth > maxArithDepth {
		return false
	}
	for _, vs := range [2][]string{st.vals, st.avals} {
		for _, v := range vs {
			refs, _, ok := scanArith(v)
			if !ok {
				if strings.ContainsAny(v, "$`") {
					w.hidden(v) // judge the commands in it too
				}
				return false
			}
			for _, r := range refs {
				if !w.arithSafeVar(r, memo, depth+1) {
					return false
				}
			}
		}
	}
	return true
}

// promptSafeVar reports whether every value of the variable is known and
// holds nothing a prompt expansion runs.
func (w *walker) promptSafeVar(name string) bool {
	st := w.vars[name]
	if w.varsUnknown || st == nil || st.untrusted {
		return false
	}
	for _, vs := range [2][]string{st.vals, st.avals} {
		for _, v := range vs {
			if strings.ContainsAny(v, "$`") {
				w.hiddenAs(v, "as a prompt")
				return false
			}
		}
	}
	return true
}

// nameSafeVar reports whether every value of the variable is a name whose
// subscript, if any, is safe arithmetic.
func (w *walker) nameSafeVar(name string, memo map[string]bool) bool {
	st := w.vars[name]
	if w.varsUnknown || st == nil || st.untrusted || st.unknown {
		return false
	}
	for _, v := range st.vals {
		k := strings.IndexByte(v, '[')
		if k < 0 {
			continue
		}
		refs, _, ok := scanArith(v[k:])
		if !ok {
			return false
		}
		for _, r := range refs {
			if !w.arithSafeVar(r, memo, 1) {
				return false
			}
		}
	}
	return true
}

// Excerpt quotes a piece of the command for a reason, cut when long.
func Excerpt(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "…"
	}
	return "\"" + s + "\""
}

// lit returns the text of a word that is one literal, else "".
func lit(word *syntax.Word) string {
	if word != nil && len(word.Parts) == 1 {
		if l, ok := word.Parts[0].(*syntax.Lit); ok {
			return l.Value
		}
	}
	return ""
}
