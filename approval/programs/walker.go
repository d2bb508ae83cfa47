package programs

// Walker is the shell analysis as an entry sees it while it reads one
// command's words: where it records what the command does. The walker of
// approval/shell implements it; this package reads no command line of
// its own.
type Walker interface {
	// Access records a file the command reads or writes; via says how
	// ("sed -i", "tar operand").
	Access(kind AccessKind, w Word, via string)
	// Destination records a write to a path that may be a directory the
	// command writes into (cp a out/).
	Destination(w Word, via string)
	// Mention records a word the program may take for a file, in a way
	// the table does not know.
	Mention(w Word, via string)
	// OptionAccess records a file the value of option opt of program
	// names; dir: a destination that may be a directory.
	OptionAccess(kind AccessKind, w Word, program, opt string, dir bool)
	// Find records a finding on the command.
	Find(f Finding)
	// CommandName is the name of the command being read, "" when none.
	CommandName() string
	// Unjudged records what the command runs that the table has no entry
	// for (make's recipes, python x.py).
	Unjudged(what string)
	// EnvFindings records the variables the line set that make p run
	// another program.
	EnvFindings(p *Program)
	// Canonical records the command's line without its global options
	// (git -C . push is git push), so that rules see through them.
	Canonical(words []string)
	// ScriptWords gives the findings of program that name no words the
	// words of the script it ran: a rule names a script by quoting it
	// whole.
	ScriptWords(program string, words []string)
	// Within reads fn's operands in directory dir (tar -C): nil leaves
	// the directory as it is, a dynamic word makes it unknown.
	Within(dir *Word, fn func())
}
