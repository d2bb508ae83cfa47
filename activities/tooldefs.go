package activities

import (
	"encoding/json"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/protected"
)

// toolDef is one tool as the model sees it. Each tool's file defines its own
// (readTool in read.go, …) beside the code that decodes its input, with the
// description in an embedded .md next to it. Schemas are literal JSON so the
// request bytes are the same on every call (and every replay).
type toolDef struct {
	name, description, schema string
}

// protectedNote is the one list of protected paths (protected.By), as
// Write, Edit and Bash describe it: the same paths the path guard, the
// system hook and the sandbox refuse.
var protectedNote = protected.Summary()

// describe is a description as its .md file holds it, without the file's
// final newline and with {{protected}} standing for protectedNote.
func describe(md string) string {
	return strings.ReplaceAll(strings.TrimSuffix(md, "\n"), "{{protected}}", protectedNote)
}

// toolDefs are the tools in the order the model is offered them.
var toolDefs = []toolDef{readTool, globTool, grepTool, lspTool, writeTool, editTool, bashTool}

// ToolDefinitions returns the tools as OpenAI function tools, in a fixed
// order with fixed bytes.
func ToolDefinitions() []openai.Tool {
	out := make([]openai.Tool, 0, len(toolDefs))
	for _, d := range toolDefs {
		out = append(out, openai.Tool{
			Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{
				Name:        d.name,
				Description: d.description,
				Parameters:  json.RawMessage(d.schema),
			},
		})
	}
	return out
}
