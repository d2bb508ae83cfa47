package programs

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
	// xargs' examples are held against a rule that names the program
	// it runs: its plain options do not stop it from covering the line.
	xargs := Examples{Program: "xargs echo", Allow: xargsOptions.allow, Ask: xargsOptions.ask}
	return append(examplesOf(programTable), xargs), programsErr
}

// examplesOf are the examples of the entries of table.
func examplesOf(table []Program) []Examples {
	out := make([]Examples, len(table))
	for i := range table {
		p := &table[i]
		out[i] = Examples{Program: p.name, Allow: p.allow, Ask: p.ask, Partial: p.partial}
	}
	return out
}
