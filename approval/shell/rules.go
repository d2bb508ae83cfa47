package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/custos-dev/custos/approval/programs"
)

// What the rules (in package approval) need of the shell analysis: a rule
// names commands in their words, so its text is read as a command is.

// RuleWords splits a Bash rule's command specifier into static words the
// way a command's are read, so that a rule and the commands it names
// agree. ok is false unless it is exactly one plain simple command; pattern
// reports an unquoted glob character (*, ?, [, {) in it.
func RuleWords(spec string, env Env) (words []string, pattern, ok bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(spec), "")
	if err != nil || len(f.Stmts) != 1 {
		return nil, false, false
	}
	s := f.Stmts[0]
	c, isCall := s.Cmd.(*syntax.CallExpr)
	if !isCall || len(s.Redirs) > 0 || s.Background || s.Negated || len(c.Assigns) > 0 || len(c.Args) == 0 {
		return nil, false, false
	}
	w := &walker{a: &analyzer{env: env, out: &Analysis{}}, src: spec}
	for _, word := range c.Args {
		for _, part := range word.Parts {
			if lit, isLit := part.(*syntax.Lit); isLit && strings.ContainsAny(lit.Value, "*?[{") {
				pattern = true
			}
		}
		// Words are not brace-expanded here: in a rule, {a,b} is a glob
		// alternation.
		vals, static := w.parts(word.Parts, true)
		if !static || len(vals) != 1 {
			return nil, false, false
		}
		words = append(words, vals[0])
	}
	return words, pattern, true
}

// Normalise is the text rules match for argv: the basename of the program,
// cleaned paths and, for the alias-table commands (rm, chmod …), sorted
// de-aliased flags. A rule's words and a command's are normalised alike.
func Normalise(words []string) string { return normaliseWords(words).Text }

// Spelled is one word as a command's Text spells it: cleaned like an
// argument, quoted when the shell would need quotes.
func Spelled(word string) string { return quoteWord(programs.CleanArg(word)) }
