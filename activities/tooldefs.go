package activities

import (
	"encoding/json"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/activities/toolkit"
)

// toolDefs are the tools in the order the model is offered them.
var toolDefs = []toolkit.ToolDef{readTool, globTool, grepTool, lspTool, writeTool, editTool, bashTool}

// ToolDefinitions returns the tools as OpenAI function tools, in a fixed
// order with fixed bytes.
func ToolDefinitions() []openai.Tool {
	out := make([]openai.Tool, 0, len(toolDefs))
	for _, d := range toolDefs {
		out = append(out, openai.Tool{
			Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{
				Name:        d.Name,
				Description: d.Description,
				Parameters:  json.RawMessage(d.Schema),
			},
		})
	}
	return out
}
