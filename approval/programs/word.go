package programs

import "mvdan.cc/sh/v3/syntax"

// Word is one word of a command as the walker evaluated it: its text
// after quote removal and expansion (its source text when it is dynamic),
// and whether it is static, known before the command runs.
type Word struct {
	Text   string
	Static bool
	Pipe   bool // a process substitution <(…) or >(…): a pipe, not a file
	// Node is the word this came from, to re-evaluate a dynamic word with
	// the tracked variables when it names a file.
	Node *syntax.Word
}
