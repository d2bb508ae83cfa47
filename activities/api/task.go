package api

import (
	"encoding/json"
	"fmt"
	"strings"
)

// TaskTool is the Task tool: a subagent, run as a child workflow of the job
// (workflows/task.go). It is no activity; the workflow runs it.
const TaskTool = "Task"

// TaskSchema is the Task tool's input schema.
const TaskSchema = `{"type":"object","properties":{"description":{"type":"string","description":"A short (3-5 word) description of the task, shown to people"},"prompt":{"type":"string","description":"The whole task for the subagent: it sees nothing of this conversation, so say everything it needs"},"subagent_type":{"type":"string","description":"The subagent to run it (one of those listed); leave it out for a general-purpose subagent"},"isolation":{"type":"string","enum":["worktree"],"description":"\"worktree\" gives the subagent a git worktree of its own, on a branch of its own, so its commands run beside others'"}},"required":["description","prompt"],"additionalProperties":false}`

// Limits of a subagent.
const (
	// MaxTaskDepth is how deep subagents nest: a job's child is at depth
	// 1; a child whose definition allows Task may start one at depth 2.
	MaxTaskDepth = 2
	// DefaultMaxParallelTasks is how many children a job runs at once
	// unless the settings' subagents.maxParallel says otherwise.
	DefaultMaxParallelTasks = 4
	// IsolationWorktree is the one isolation a Task call may ask for.
	IsolationWorktree = "worktree"
)

// TaskInput is a Task call's input.
type TaskInput struct {
	Description  string `json:"description"`
	Prompt       string `json:"prompt"`
	SubagentType string `json:"subagent_type,omitempty"`
	Isolation    string `json:"isolation,omitempty"`
}

// ParseTaskInput reads a Task call's input (CheckArguments already checked
// its shape): an empty prompt is refused.
func ParseTaskInput(input json.RawMessage) (TaskInput, error) {
	var in TaskInput
	if err := json.Unmarshal(input, &in); err != nil {
		return in, fmt.Errorf("Task: the arguments are not a Task input: %v", err)
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return in, fmt.Errorf("Task: the prompt is empty; give the subagent its whole task")
	}
	return in, nil
}

// Subagent is a subagent defined as a file (.custos/agents/NAME.md of a
// trusted workspace, or the user's ~/.config/custos/agents/NAME.md), in
// Claude Code's format: front matter name, description, tools, mode; the
// body is added to the child's system prompt.
type Subagent struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Tools are the tools the subagent is offered (nil: every tool its
	// parent has); Task among them lets it start subagents of its own.
	Tools []string `json:"tools,omitempty"`
	// Mode narrows the child's permission mode (never widens it).
	Mode         string `json:"mode,omitempty"`
	Instructions string `json:"instructions,omitempty"`
	// Source is the file it was read from.
	Source string `json:"source,omitempty"`
}

// TaskOffer offers the model the Task tool, with the subagents it may name.
type TaskOffer struct {
	Agents []Subagent `json:"agents,omitempty"`
}

// InputPath is the file_path of a Write or Edit input ("" when it has none).
func InputPath(input json.RawMessage) string {
	var in struct {
		FilePath string `json:"file_path"`
	}
	_ = json.Unmarshal(input, &in)
	return in.FilePath
}

// taskSummary is a Task call's summary: "Task (reviewer, worktree): …".
func taskSummary(description, agent, isolation string) string {
	var tags []string
	for _, t := range []string{agent, isolation} {
		if t != "" {
			tags = append(tags, t)
		}
	}
	if len(tags) == 0 {
		return "Task: " + description
	}
	return "Task (" + strings.Join(tags, ", ") + "): " + description
}

// WorktreeActivity makes a Task call's git worktree (isolation
// "worktree"), on the workspace's host.
const WorktreeActivity = "TaskWorktree"

// WorktreeRequest asks for a child's worktree of the repository holding
// Workspace, at its HEAD.
type WorktreeRequest struct {
	Workspace string `json:"workspace"`
	// Child is the child's job ID: the worktree's directory and branch
	// are named after it.
	Child string `json:"child"`
	// Avoid are workspaces whose Bash lanes the worktree should not share
	// (the parent's, its running worktree siblings'), while the host's
	// lane count allows.
	Avoid []string `json:"avoid,omitempty"`
}

// WorktreeResult is the worktree made, or why there is none.
type WorktreeResult struct {
	// Refused says why no worktree was made (the workspace is not in a
	// git repository, it has no commit): the Task call's result.
	Refused string `json:"refused,omitempty"`
	// Path is the worktree's top; Workspace the child's workspace in it
	// (the parent's workspace's place in the repository).
	Path      string `json:"path,omitempty"`
	Workspace string `json:"workspace,omitempty"`
	// Branch is the branch made for it (custos/CHILD), at Commit.
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Lane is the Bash lane its workspace is on.
	Lane string `json:"lane,omitempty"`
}
