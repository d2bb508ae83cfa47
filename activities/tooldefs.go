package activities

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/sandbox"
)

// toolDef is one tool as the model sees it. Each tool's file defines its own
// (readTool in read.go, …) beside the code that decodes its input, with the
// description in an embedded .md next to it. Schemas are literal JSON so the
// request bytes are the same on every call (and every replay).
type toolDef struct {
	name, description, schema string
}

// protectedNote is the one list of protected paths (sandbox.ProtectedBy), as
// Write, Edit and Bash describe it: the same paths the path guard, the
// system hook and the sandbox refuse.
var protectedNote = sandbox.ProtectedSummary()

// describe is a description as its .md file holds it, without the file's
// final newline and with {{protected}} standing for protectedNote.
func describe(md string) string {
	return strings.ReplaceAll(strings.TrimSuffix(md, "\n"), "{{protected}}", protectedNote)
}

// toolDefs are the tools in the order the model is offered them.
var toolDefs = []toolDef{readTool, globTool, grepTool, writeTool, editTool, bashTool}

// ToolDefinitions returns the six tools as OpenAI function tools, in a fixed
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

// ToolNames are the tools' names, in the order the model is offered them.
func ToolNames() []string {
	names := make([]string, len(toolDefs))
	for i, d := range toolDefs {
		names[i] = d.name
	}
	return names
}

// KnownTool reports whether name is one of the six tools.
func KnownTool(name string) bool {
	for _, d := range toolDefs {
		if d.name == name {
			return true
		}
	}
	return false
}

// maxSummary bounds Summarize's answer, in runes.
const maxSummary = 100

// Summarize gives a one-line human summary of a tool call ("Read README.md",
// "Bash: go test ./...") for activity summaries and the terminal. It never
// fails: malformed input is summarized as such.
func Summarize(tool string, input json.RawMessage) string {
	var args map[string]any
	if err := json.Unmarshal(input, &args); err != nil || args == nil {
		return clip(tool + " (invalid arguments)")
	}
	str := func(k string) string {
		s, _ := args[k].(string)
		return s
	}
	var s string
	switch tool {
	case ReadActivity:
		s = "Read " + str("file_path")
		if off, ok := args["offset"].(float64); ok && off > 1 {
			s += fmt.Sprintf(" from line %d", int(off))
		}
	case GlobActivity:
		s = "Glob " + str("pattern")
		if p := str("path"); p != "" {
			s += " in " + p
		}
	case GrepActivity:
		s = fmt.Sprintf("Grep %q", str("pattern"))
		if p := str("path"); p != "" {
			s += " in " + p
		}
		if g := str("glob"); g != "" {
			s += " (" + g + ")"
		}
	case WriteActivity:
		s = "Write " + str("file_path")
	case EditActivity:
		s = "Edit " + str("file_path")
		if b, _ := args["replace_all"].(bool); b {
			s += " (replace all)"
		}
	case BashActivity:
		s = "Bash: " + str("command")
	default:
		compact, _ := json.Marshal(args) // map keys are sorted: deterministic
		s = tool + " " + string(compact)
	}
	return clip(s)
}

// clip makes s one line of at most maxSummary runes.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= maxSummary {
		return s
	}
	r := []rune(s)
	return string(r[:maxSummary-1]) + "…"
}
