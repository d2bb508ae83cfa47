package workflows

import (
	"cmp"
	"encoding/json"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/workflows/subagent"
	"github.com/custos-dev/custos/workflows/worktrees"
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

// ChildInfo is a running child, as the parent's status lists it.
type ChildInfo = subagent.ChildInfo

// taskState is what a job knows of its running children.
type taskState = subagent.Tasks

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
	def, why := subagent.Find(j.agents(), in.SubagentType)
	if why != "" {
		return api.ToolResult{IsError: true, Output: why}, nil
	}
	if why := worktrees.IsolationRefused(ctx, in.Isolation); why != "" {
		return api.ToolResult{IsError: true, Output: why}, nil
	}
	childID := fmt.Sprintf("%s-task-%s", j.id, callID)
	info := &ChildInfo{ID: childID, CallID: callID, Description: in.Description, Waiting: true}
	if def != nil {
		info.Subagent = def.Name
	}
	j.tasks.Add(info)
	defer j.tasks.Remove(callID)
	cin := j.childInput(in, def, callID)
	if err := j.taskSlot(ctx); err != nil {
		return api.ToolResult{}, err
	}
	defer func() { j.tasks.Running-- }()
	cin.Mode = subagent.Narrower(cin.Mode, j.st.Mode) // narrowed while it waited its turn
	var wt *api.WorktreeResult
	if in.Isolation != "" {
		if wt, err = worktrees.Make(ctx, j.onHost, &j.tasks, j.in.Workspace, childID); err != nil || wt.Refused != "" {
			return worktrees.Failed(ctx, wt, err)
		}
		cin.Workspace, cin.Parent.Worktree, cin.Parent.Branch = wt.Workspace, wt.Path, wt.Branch
		info.Worktree, info.Workspace = wt.Path, wt.Workspace
	}
	info.Waiting = false
	j.emit(ctx, Event{Kind: "subagent", CallID: callID, Tool: api.TaskTool,
		Text: fmt.Sprintf("subagent %s started: %s%s", childID, in.Description, subagent.WorktreeNote(wt))})
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
	f := workflow.ExecuteChildWorkflow(cctx, WorkflowName, cin)
	j.tasks.Started(callID, f)
	err = f.Get(ctx, &res)
	j.addChildUsage(ctx, res.Usage)
	if err != nil {
		if ctx.Err() != nil {
			return api.ToolResult{}, err
		}
		return api.ToolResult{IsError: true, Output: fmt.Sprintf("Error: subagent %s failed: %v", childID, err)}, nil
	}
	return api.ToolResult{Output: subagent.Result(childID, in.Description, res.Answer, res.Reason, res.Changed, res.Commands,
		res.Usage.TotalTokens, cmp.Or(j.in.MaxOutput, api.DefaultMaxOutput), wt)}, nil
}

// taskSlot waits until fewer than subagents.maxParallel children run.
func (j *job) taskSlot(ctx workflow.Context) error {
	limit := cmp.Or(j.st.Settings.Subagents.MaxParallel, api.DefaultMaxParallelTasks)
	if err := workflow.Await(ctx, func() bool { return j.tasks.Running < limit }); err != nil {
		return err
	}
	j.tasks.Running++
	return nil
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

// narrowByParent takes the mode a parent switched to where it is narrower
// than this child's own (subagent.ParentModeSignal).
func (j *job) narrowByParent(ctx workflow.Context, p subagent.ParentMode) {
	if mode, ok := subagent.NarrowedBy(j.st.Mode, p.Mode); ok {
		j.setMode(ctx, mode, ModeChange{By: p.By, Channel: "its parent " + p.Parent})
	}
}

// childAsked shows, in the journal and the Web UI, a running child's call
// that waits for a person, or no longer does (subagent.ChildAskSignal).
func (j *job) childAsked(ctx workflow.Context, a subagent.ChildAsk) {
	c := j.tasks.Asked(a)
	if c == nil {
		return
	}
	j.emit(ctx, Event{Kind: "subagent", CallID: c.CallID, Tool: api.TaskTool, Text: subagent.AskText(c, a)})
	j.updateDetails(ctx)
}
