package activities

import (
	_ "embed"
	"encoding/json"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
)

//go:embed task.md
var taskDescription string

// taskDefinition is the Task tool as the model sees it: task.md, then the
// subagents it may name, each by name and description, in the order the
// workflow gives them (so the request's bytes are the same on every call).
func taskDefinition(offer api.TaskOffer) openai.Tool {
	desc := toolkit.Describe(taskDescription)
	if len(offer.Agents) > 0 {
		var b strings.Builder
		b.WriteString(desc)
		b.WriteString("\n\nSubagents (subagent_type), besides the general-purpose one you get without it:")
		for _, a := range offer.Agents {
			b.WriteString("\n- " + a.Name + ": " + oneLine(a.Description))
		}
		desc = b.String()
	}
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: api.TaskTool, Description: desc, Parameters: json.RawMessage(api.TaskSchema)}}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// offeredTools are custos' tools a request offers: every one, or, for a
// subagent restricted to some (ModelRequest.Restrict), only those; then
// Task when the request offers it.
func offeredTools(req api.ModelRequest) []openai.Tool {
	var out []openai.Tool
	if req.WithTools {
		for _, t := range ToolDefinitions() {
			if !req.Restrict || slices.Contains(req.Only, t.Function.Name) {
				out = append(out, t)
			}
		}
	}
	if req.Task != nil {
		out = append(out, taskDefinition(*req.Task))
	}
	return out
}
