package workflows

import (
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/subagent"
	"github.com/custos-dev/custos/workflows/tokens"
)

// depth is how deep the job nests (0: no parent).
func (j *job) depth() int {
	if p := j.in.Parent; p != nil {
		return p.Depth
	}
	return 0
}

// toolOffered says whether the job is offered tool: every tool, or for a
// restricted subagent those it names (mcp__server names all its tools).
func (j *job) toolOffered(tool string) bool {
	p := j.in.Parent
	if p == nil || !p.Restrict {
		return true
	}
	return subagent.ToolIn(p.Tools, tool)
}

// offersTask says whether the job may start subagents: a job may; a child
// only below the depth limit and when its definition names Task.
func (j *job) offersTask() bool {
	p := j.in.Parent
	if p == nil {
		return true
	}
	return p.Depth < api.MaxTaskDepth && p.Restrict && subagent.ToolIn(p.Tools, api.TaskTool)
}

// agents are the subagents the job's Task calls may name.
func (j *job) agents() []api.Subagent {
	if p := j.in.Parent; p != nil {
		return p.Agents
	}
	return j.st.Agents
}

// notOffered refuses at layer 1 a call to a tool the job is not offered.
func (j *job) notOffered(tool string) (approval.Verdict, bool) {
	switch {
	case tool == api.TaskTool && !j.offersTask():
		return approval.Verdict{Decision: approval.Deny, Layer: approval.LayerRules,
			Reason: fmt.Sprintf("Task is not offered to this job: a subagent (depth %d) starts no subagent of its own unless its definition names Task, and never deeper than %d", j.depth(), api.MaxTaskDepth)}, true
	case !j.toolOffered(tool):
		return approval.Verdict{Decision: approval.Deny, Layer: approval.LayerRules,
			Reason: fmt.Sprintf("this subagent is offered only %s", strings.Join(j.in.Parent.Tools, ", "))}, true
	}
	return approval.Verdict{}, false
}

// offerTools sets what a model request offers: Task with its subagents
// when the job may start them, and a restricted subagent's tools only.
func (j *job) offerTools(req *api.ModelRequest) {
	if j.offersTask() {
		req.Task = &api.TaskOffer{Agents: j.agents()}
	}
	if p := j.in.Parent; p != nil && p.Restrict {
		subagent.Restrict(req, p.Tools)
	}
}

// childInput is the job a Task call starts: the prompt as its task, this
// job's workspace, host and limits, its mode narrowed by the definition,
// its share of the remaining budget, its settings and tools.
func (j *job) childInput(in api.TaskInput, def *api.Subagent, callID string) JobInput {
	link := &ParentLink{Job: j.id, CallID: callID, Depth: j.depth() + 1, Description: in.Description,
		Settings: j.st.Settings, Learned: j.st.Learned, Agent: def, Agents: j.agents()}
	if p := j.in.Parent; p != nil && p.Restrict {
		link.Restrict, link.Tools = true, p.Tools
	}
	mode := ""
	if def != nil {
		mode = def.Mode
		if def.Tools != nil {
			link.Restrict, link.Tools = true, subagent.NarrowTools(link.Restrict, link.Tools, def.Tools)
		}
	}
	if link.Depth >= api.MaxTaskDepth || !subagent.ToolIn(link.Tools, api.TaskTool) {
		link.Agents = nil
	}
	return JobInput{
		Task: in.Prompt, Workspace: j.in.Workspace, WorkDir: j.in.WorkDir, Host: j.in.Host,
		Mode: subagent.ChildMode(j.st.Mode, mode), ApprovalTimeout: j.in.ApprovalTimeout, MaxTurns: j.in.MaxTurns,
		Model: j.in.Model, MaxOutput: j.in.MaxOutput, ContinueAsNewEvery: j.in.ContinueAsNewEvery,
		ContextWindow: j.in.ContextWindow, CompactAt: j.in.CompactAt, LaneWait: j.in.LaneWait,
		Owner: j.in.Owner, Once: true, MaxTokens: j.budgetShare(), Parent: link,
	}
}

// budgetShare is a child's token cap: the job's remaining budget shared
// among the answer's Task calls (tokens.Share).
func (j *job) budgetShare() int {
	n := 0
	for _, c := range j.st.PendingCalls {
		if c.Function.Name == api.TaskTool {
			n++
		}
	}
	return tokens.Share(j.budgetStatus(), n)
}

// adoptParent makes a child's state its parent's where it matters to the
// policy: the parent's settings and learned rules replace what the child
// read, and its audit and journal name the parent.
func (j *job) adoptParent(ctx workflow.Context) {
	p := j.in.Parent
	if p == nil {
		return
	}
	j.st.Settings = p.Settings
	j.st.Learned = append([]LearnedRule(nil), p.Learned...)
	text := fmt.Sprintf("subagent of job %s (its call %s, depth %d)", p.Job, p.CallID, p.Depth)
	if p.Agent != nil {
		text += fmt.Sprintf(", as %s (%s)", p.Agent.Name, p.Agent.Source)
	}
	if p.Restrict {
		text += ", offered only: " + strings.Join(p.Tools, ", ")
	}
	if p.Worktree != "" {
		text += fmt.Sprintf(", in the git worktree %s on the branch %s", p.Worktree, p.Branch)
	}
	j.audit(ctx, approval.AuditRecord{Event: "subagent-of", Reason: text})
	j.emit(ctx, Event{Kind: "subagent", Text: text})
}

// noteChange remembers, for the Task result, the files a call changed (a
// Write or Edit that succeeded) and the commands that ran.
func (j *job) noteChange(tool string, input []byte, failed bool) {
	if failed || j.in.Parent == nil {
		return
	}
	switch tool {
	case api.WriteActivity, api.EditActivity:
		path := api.InputPath(input)
		if path != "" && !slices.Contains(j.st.Changed, path) && len(j.st.Changed) < maxChangedNamed {
			j.st.Changed = append(j.st.Changed, path)
		}
	case api.BashActivity:
		j.st.Commands++
	}
}

// maxChangedNamed bounds the files a child names.
const maxChangedNamed = 200

// noteSubagents says which subagent files were skipped and why.
func (j *job) noteSubagents(ctx workflow.Context, notes []string) {
	for _, n := range notes {
		j.audit(ctx, approval.AuditRecord{Event: "subagents", Reason: n})
		j.emit(ctx, Event{Kind: "subagents", Text: n})
	}
}

// tellParent tells a child's parent that its call a waits for a person
// (outcome "") or how it was decided, in the background (a cancelled
// child still tells it its calls were denied).
func (j *job) tellParent(ctx workflow.Context, a PendingAsk, outcome string) {
	p := j.in.Parent
	if p == nil || workflow.GetVersion(ctx, subagent.AskVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	msg := subagent.ChildAsk{Child: j.id, CallID: a.CallID, Tool: a.Tool, Summary: a.Summary, Deadline: a.Deadline, Outcome: outcome}
	j.bg.Go(ctx, func(ctx workflow.Context) { subagent.TellParent(ctx, p.Job, msg) })
}
