package subagent

import (
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/activities/api"
)

// Find finds the subagent a Task call names among agents ("" is the
// general one); why says what is wrong, as the call's result.
func Find(agents []api.Subagent, name string) (*api.Subagent, string) {
	if strings.TrimSpace(name) == "" || name == "general-purpose" {
		return nil, ""
	}
	for i := range agents {
		if agents[i].Name == name {
			return &agents[i], ""
		}
	}
	names := make([]string, 0, len(agents))
	for _, a := range agents {
		names = append(names, a.Name)
	}
	known := "none is defined (.custos/agents/NAME.md of a trusted workspace, ~/.config/custos/agents/NAME.md)"
	if len(names) > 0 {
		known = "the defined ones are " + strings.Join(names, ", ")
	}
	return nil, fmt.Sprintf("Task: unknown subagent_type %q; leave it out for a general-purpose subagent, or name one of the defined ones (%s)", name, known)
}

// Restrict makes req offer a restricted subagent only the tools it is
// offered (mcp__SERVER names all of a server's tools).
func Restrict(req *api.ModelRequest, tools []string) {
	req.Restrict = true
	for _, t := range api.ToolNames() {
		if ToolIn(tools, t) {
			req.Only = append(req.Only, t)
		}
	}
	var mcp []openai.Tool
	for _, t := range req.Tools {
		if t.Function != nil && ToolIn(tools, t.Function.Name) {
			mcp = append(mcp, t)
		}
	}
	req.Tools = mcp
}

// Result is what the model is told of a child's answer: who answered
// (childID, its description), why it stopped when not done, the answer
// (capped at maxOutput as every tool's output is), the files it changed,
// the commands it ran, its tokens and its worktree.
func Result(childID, description, answer, reason string, changed []string, commands, tokens, maxOutput int, wt *api.WorktreeResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Subagent %s (%s) answered", childID, description)
	if reason != "" && reason != "done" {
		fmt.Fprintf(&b, " (it stopped: %s)", reason)
	}
	b.WriteString(":\n\n")
	b.WriteString(CapOutput(answer, maxOutput, childID))
	b.WriteString("\n\n")
	if len(changed) == 0 {
		b.WriteString("Files it changed with Write or Edit: none.")
	} else {
		b.WriteString("Files it changed with Write or Edit: " + strings.Join(changed, ", ") + ".")
	}
	if commands > 0 {
		fmt.Fprintf(&b, " Commands it ran: %d (what they changed: starter changes %s).", commands, childID)
	}
	fmt.Fprintf(&b, " Tokens: %d.", tokens)
	b.WriteString(WorktreeResult(wt))
	return b.String()
}
