// Package subagent holds what the Task tool's workflow code computes
// without the workflow: a child's mode and tools, narrowed from its
// parent's, and the texts of its result and journal.
package subagent

import (
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
)

// ToolIn says whether tools names tool (mcp__SERVER names all its tools).
func ToolIn(tools []string, tool string) bool {
	for _, t := range tools {
		if t == tool || (strings.HasPrefix(t, approval.MCPPrefix) && strings.HasPrefix(tool, t+"__")) {
			return true
		}
	}
	return false
}

// NarrowTools is want, less what the parent lacks.
func NarrowTools(restricted bool, parent, want []string) []string {
	out := []string{}
	for _, t := range want {
		if !restricted || ToolIn(parent, t) {
			out = append(out, t)
		}
	}
	return out
}

// CapOutput keeps the head of an answer longer than max, saying where the
// whole one is.
func CapOutput(s string, max int, childID string) string {
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

// ChildMode is the narrower of the parent's mode and the one a subagent's
// definition asks for: a child never gets a wider mode than its parent.
func ChildMode(parent approval.Mode, want string) approval.Mode {
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

// WorktreeNote is what the journal adds about a child's worktree.
func WorktreeNote(wt *api.WorktreeResult) string {
	if wt == nil {
		return ""
	}
	return fmt.Sprintf(" (in the git worktree %s, branch %s, Bash lane %s)", wt.Path, wt.Branch, wt.Lane)
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// WorktreeResult is what a Task result adds about a child's worktree ("" for
// none).
func WorktreeResult(wt *api.WorktreeResult) string {
	if wt == nil {
		return ""
	}
	return fmt.Sprintf("\nIt worked in its own git worktree %s, on the branch %s (made at %s); the worktree is kept with whatever it left there: merge or delete the branch, and remove the worktree with git worktree remove %s.", wt.Path, wt.Branch, shortCommit(wt.Commit), wt.Path)
}

// Tasks is what a job knows of its running children.
type Tasks struct {
	Running int
	// worktree is set while a worktree is being made: they are made one at
	// a time, so each avoids the lanes of those made before it.
	Worktree bool
	// children are the running children by call ID, in the order they
	// started.
	children map[string]*ChildInfo
	order    []string
	// futures are the started children's (mode.go).
	futures map[string]workflow.ChildWorkflowFuture
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
	// Asks are its calls that wait for a person, as it told its parent.
	Asks []ChildCall `json:"asks,omitempty"`
	// Workspace is its worktree's workspace, whose Bash lane a sibling's
	// worktree avoids.
	Workspace string `json:"-"`
}

// Add lists a child.
func (t *Tasks) Add(c *ChildInfo) {
	if t.children == nil {
		t.children = map[string]*ChildInfo{}
	}
	t.children[c.CallID] = c
	t.order = append(t.order, c.CallID)
}

// Remove takes a child off the list.
func (t *Tasks) Remove(callID string) {
	delete(t.children, callID)
	delete(t.futures, callID)
	t.order = slices.DeleteFunc(t.order, func(s string) bool { return s == callID })
}

// List is the running children, in the order they started.
func (t *Tasks) List() []ChildInfo {
	out := make([]ChildInfo, 0, len(t.order))
	for _, id := range t.order {
		out = append(out, *t.children[id])
	}
	return out
}
