package toolkit

import (
	"strings"

	"github.com/custos-dev/custos/protected"
)

// ToolDef is one tool as the model sees it. Each tool's file defines its own
// (readTool in read.go, …) beside the code that decodes its input, with the
// description in an embedded .md next to it. Schemas are literal JSON so the
// request bytes are the same on every call (and every replay).
type ToolDef struct {
	Name, Description, Schema string
}

// protectedNote is the one list of protected paths (protected.By), as
// Write, Edit and Bash Describe it: the same paths the path guard, the
// system hook and the sandbox refuse.
var protectedNote = protected.Summary()

// Describe is a description as its .md file holds it, without the file's
// final newline and with {{protected}} standing for protectedNote.
func Describe(md string) string {
	return strings.ReplaceAll(strings.TrimSuffix(md, "\n"), "{{protected}}", protectedNote)
}
