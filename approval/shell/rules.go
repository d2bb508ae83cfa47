package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// What the rules (in package approval) need of the shell analysis: a rule
// names commands in their words, so its text is read as a command is, and
// the program table's examples are checked against rules of the policy.

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
func Spelled(word string) string { return quoteWord(cleanArg(word)) }

// Examples are one table entry's checked examples: commands a rule for the
// entry (Bash(program:*)) must allow, and commands it must not.
type Examples struct {
	Program    string
	Allow, Ask []string
	// Partial entries list only the options that name files: they need
	// no allow examples.
	Partial bool
}

// TableExamples returns every entry's examples, for the policy to check
// against its rules, and what building the table found wrong when the
// package loaded (nil when nothing).
func TableExamples() ([]Examples, error) {
	return examplesOf(programTable), programsErr
}

func examplesOf(table []program) []Examples {
	out := make([]Examples, len(table))
	for i, p := range table {
		out[i] = Examples{Program: p.name, Allow: p.allow, Ask: p.ask, Partial: p.partial}
	}
	return out
}
