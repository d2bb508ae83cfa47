package workflows

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
)

// The Task tool: a subagent is a child workflow, an AgentWorkflow of its
// own (JOB-task-CALL) with the call's prompt as its task, the parent's
// workspace and the parent's settings, mode and budget, never wider
// (children.go). It ends at its first answer, which is the call's result.
// Several Task calls of one answer run side by side, as ordinary futures,
// at most subagents.maxParallel at once. Children run only inside a turn's
// runCalls, and a run continues as new only between turns, so a parent
// never continues as new while a child runs.

// taskVersion marks histories recorded since Task became a tool: before, a
// call named Task was an unknown tool, denied at layer 1.
const taskVersion = "task-tool"

// taskState is what a job knows of its running children.
type taskState struct {
	running int
	// children are the running children by call ID, in the order they
	// started.
	children map[string]*ChildInfo
	order    []string
}

// ChildInfo is a running child, as the parent's status lists it.
type ChildInfo struct {
	ID          string `json:"id"`
	CallID      string `json:"callId"`
	Description string `json:"description"`
	Subagent    string `json:"subagent,omitempty"`
	Worktree    string `json:"worktree,omitempty"`
	// Waiting is set while it waits for its turn (subagents.maxParallel).
	Waiting bool `json:"waiting,omitempty"`
}

// isTask reports whether tool is the Task tool in this history.
func (j *job) isTask(ctx workflow.Context, tool string) bool {
	return tool == api.TaskTool && workflow.GetVersion(ctx, taskVersion, workflow.DefaultVersion, 1) != workflow.DefaultVersion
}

// runTask runs one allowed Task call: it waits for a slot, starts the
// child and returns its answer. What the child does wrong (it fails, it is
// refused) is the call's result, never the parent's failure; an interrupt
// or the parent's end cancels the child (its commands killed, its waiting
// calls denied) and the call comes back stopped.
func (j *job) runTask(ctx workflow.Context, callID string, input json.RawMessage) (api.ToolResult, error) {
	in, err := api.ParseTaskInput(input)
	if err != nil {
		return api.ToolResult{IsError: true, Output: err.Error()}, nil
	}
	def, why := j.subagentFor(in.SubagentType)
	if why != "" {
		return api.ToolResult{IsError: true, Output: why}, nil
	}
	if in.Isolation != "" {
		return api.ToolResult{IsError: true, Output: fmt.Sprintf("Task: isolation %q is not available in this release; run it without isolation", in.Isolation)}, nil
	}
	childID := fmt.Sprintf("%s-task-%s", j.id, callID)
	info := &ChildInfo{ID: childID, CallID: callID, Description: in.Description, Waiting: true}
	if def != nil {
		info.Subagent = def.Name
	}
	j.tasks.add(info)
	defer j.tasks.remove(callID)
	cin := j.childInput(in, def, callID)
	if err := j.taskSlot(ctx); err != nil {
		return api.ToolResult{}, err
	}
	defer func() { j.tasks.running-- }()
	info.Waiting = false
	j.emit(ctx, Event{Kind: "subagent", CallID: callID, Tool: api.TaskTool,
		Text: fmt.Sprintf("subagent %s started: %s", childID, in.Description)})
	j.updateDetails(ctx)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: childID,
		// Ending, cancelling or terminating the parent cancels the child;
		// an interrupt cancels its context, and the call returns once the
		// child has stopped (its commands killed, its waiting calls denied).
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		WaitForCancellation: true,
		StaticSummary:       "subagent of " + j.id + ": " + in.Description,
	})
	var res JobResult
	err = workflow.ExecuteChildWorkflow(cctx, WorkflowName, cin).Get(ctx, &res)
	j.addChildUsage(ctx, res.Usage)
	if err != nil {
		if ctx.Err() != nil {
			return api.ToolResult{}, err
		}
		return api.ToolResult{IsError: true, Output: fmt.Sprintf("Error: subagent %s failed: %v", childID, err)}, nil
	}
	return api.ToolResult{Output: j.taskResult(childID, in, res)}, nil
}

// taskSlot waits until fewer than subagents.maxParallel children run.
func (j *job) taskSlot(ctx workflow.Context) error {
	limit := cmp.Or(j.st.Settings.Subagents.MaxParallel, api.DefaultMaxParallelTasks)
	if err := workflow.Await(ctx, func() bool { return j.tasks.running < limit }); err != nil {
		return err
	}
	j.tasks.running++
	return nil
}

func (t *taskState) add(c *ChildInfo) {
	if t.children == nil {
		t.children = map[string]*ChildInfo{}
	}
	t.children[c.CallID] = c
	t.order = append(t.order, c.CallID)
}

func (t *taskState) remove(callID string) {
	delete(t.children, callID)
	t.order = removeString(t.order, callID)
}

// list is the running children, in the order they started.
func (t *taskState) list() []ChildInfo {
	out := make([]ChildInfo, 0, len(t.order))
	for _, id := range t.order {
		out = append(out, *t.children[id])
	}
	return out
}

// addChildUsage counts a child's tokens (its own children's included)
// against this job's budget.
func (j *job) addChildUsage(ctx workflow.Context, u Usage) {
	if u.TotalTokens == 0 && u.ModelCalls == 0 {
		return
	}
	j.st.Usage.ModelCalls += u.ModelCalls
	j.st.Usage.PromptTokens += u.PromptTokens
	j.st.Usage.CompletionTokens += u.CompletionTokens
	j.st.Usage.TotalTokens += u.TotalTokens
	j.updateDetails(ctx)
}

// taskResult is what the model is told of a child's answer: who answered,
// the answer (capped as every tool's output is) and what it changed.
func (j *job) taskResult(childID string, in api.TaskInput, res JobResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Subagent %s (%s) answered", childID, in.Description)
	if res.Reason != "" && res.Reason != "done" {
		fmt.Fprintf(&b, " (it stopped: %s)", res.Reason)
	}
	b.WriteString(":\n\n")
	b.WriteString(capOutput(res.Answer, cmp.Or(j.in.MaxOutput, api.DefaultMaxOutput), childID))
	b.WriteString("\n\n")
	if len(res.Changed) == 0 {
		b.WriteString("Files it changed with Write or Edit: none.")
	} else {
		b.WriteString("Files it changed with Write or Edit: " + strings.Join(res.Changed, ", ") + ".")
	}
	if res.Commands > 0 {
		fmt.Fprintf(&b, " Commands it ran: %d (what they changed: starter changes %s).", res.Commands, childID)
	}
	fmt.Fprintf(&b, " Tokens: %d.", res.Usage.TotalTokens)
	return b.String()
}

// capOutput keeps the head of an answer longer than max, saying where the
// whole one is.
func capOutput(s string, max int, childID string) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && cut < len(s) && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[custos: the answer has %d bytes; the rest is in the transcript of %s]", len(s), childID)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// childMode is the narrower of the parent's mode and the one a subagent's
// definition asks for: a child never gets a wider mode than its parent.
func childMode(parent approval.Mode, want string) approval.Mode {
	m, err := approval.ParseMode(want)
	if want == "" || err != nil {
		return parent
	}
	if modeRank(m) < modeRank(parent) {
		return m
	}
	return parent
}

// modeRank orders modes by what runs without a person: plan only reads;
// dontAsk runs what the rules allow; default also what a person allows;
// acceptEdits also edits; bypass everything.
func modeRank(m approval.Mode) int {
	order := []approval.Mode{approval.ModePlan, approval.ModeDontAsk, approval.ModeDefault, approval.ModeAcceptEdits, approval.ModeBypass}
	if m == "" {
		m = approval.ModeDefault
	}
	if i := slices.Index(order, m); i >= 0 {
		return i
	}
	return 0 // unknown: the narrowest
}
