package workflows

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
)

// A person's own tool call (starter tool) takes the road the model's calls
// take: all six layers, a person asked at layer 5 when the policy says so,
// the audit (which names the person in By). Inside a job's conversation its
// result is told to the model with the next message, without waking it.

// registerToolUpdate sets the tool Update.
func (j *job) registerToolUpdate(ctx workflow.Context) error {
	err := workflow.SetUpdateHandlerWithOptions(ctx, ToolUpdate,
		func(ctx workflow.Context, c UserCall) (UserCallResult, error) {
			if err := j.awaitStarted(ctx); err != nil {
				return UserCallResult{}, err
			}
			res := j.runUserCall(ctx, c)
			note := fmt.Sprintf("[%s ran a tool call of their own, %s, through the same approval: %s]\n%s",
				who(c.By, cmp.Or(c.Channel, "temporal")), api.Summarize(c.Tool, c.Input), res.Decision, clip(res.Output, maxNoteBytes))
			j.st.Notes = append(j.st.Notes, note)
			return res, nil
		},
		workflow.UpdateHandlerOptions{
			Validator: func(c UserCall) error {
				if err := j.checkStartedOrStarting(); err != nil {
					return err
				}
				return j.checkUserCall(c)
			},
			Description: `Run one tool call of your own through the job's six layers: ` +
				`{"tool": "Bash", "input": {"command": "npm test"}, "by": "you"}. Its result is told to the model with the next message.`,
		})
	if err != nil {
		return fmt.Errorf("register %s update: %w", ToolUpdate, err)
	}
	return nil
}

// maxNoteBytes bounds what the model is told of a person's call: the
// output itself is in the audit and the transcript's tool events.
const maxNoteBytes = 8 << 10

// clip is s cut to at most n bytes, saying so.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + fmt.Sprintf("\n… (%d more bytes)", len(s)-n)
}

// checkUserCall refuses, before anything is recorded, what is no call.
func (j *job) checkUserCall(c UserCall) error {
	if !api.KnownTool(c.Tool) && !j.mcp.MayBe(c.Tool, j.st.MCPServers) {
		return notApplied("unknown tool %q; the tools are %s%s", c.Tool, strings.Join(api.ToolNames(), ", "), j.mcp.Named())
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(c.Input, &obj); err != nil || obj == nil {
		return notApplied("the input is not a JSON object")
	}
	return nil
}

// runUserCall decides and runs a person's call like one of the model's.
func (j *job) runUserCall(ctx workflow.Context, c UserCall) UserCallResult {
	j.st.UserCalls++
	id := j.st.EpochID(fmt.Sprintf("user_%d", j.st.UserCalls))
	if j.st.Runs > 0 {
		id = fmt.Sprintf("%s_r%d", id, j.st.Runs+1)
	}
	j.callIDs[id] = true
	j.userCalls[id] = cmp.Or(c.By, "someone")
	tc := openai.ToolCall{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: c.Tool, Arguments: string(c.Input)}}
	out := j.handleCall(ctx, tc, id, nil)
	res := UserCallResult{CallID: id, Output: out, Decision: approval.Allow}
	for i := len(j.st.Audit) - 1; i >= 0; i-- {
		if r := j.st.Audit[i]; r.CallID == id && r.Event == "" {
			res.Decision, res.Layer = r.Decision, r.Layer
			break
		}
	}
	return res
}
