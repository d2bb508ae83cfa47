package subagent

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/display"
)

// A child's call that waits for a person is asked in the child (its own
// job: its status, its channels, starter approve CHILD CALL), and its
// parent is told, so the parent's journal (its starter run or follow), its
// status and its Web UI say which child waits for what and how to answer.

// ChildAskSignal carries a ChildAsk from a child to its parent. The parent
// takes it only from a child it runs, and only to show it: nothing is
// decided by it.
const ChildAskSignal = "child-ask"

// AskVersion marks histories in which a child tells its parent of its
// waiting calls.
const AskVersion = "task-asks"

// ChildAsk is a child's call that waits for a person (Outcome "") or no
// longer does (Outcome says how it was decided).
type ChildAsk struct {
	Child    string    `json:"child"`
	CallID   string    `json:"callId"`
	Tool     string    `json:"tool"`
	Summary  string    `json:"summary"`
	Deadline time.Time `json:"deadline,omitempty"`
	Outcome  string    `json:"outcome,omitempty"`
}

// ChildCall is a child's waiting call, as the parent's status lists it.
type ChildCall struct {
	CallID   string    `json:"callId"`
	Tool     string    `json:"tool"`
	Summary  string    `json:"summary"`
	Deadline time.Time `json:"deadline,omitempty"`
}

// Asked records a in the child's list of waiting calls, and returns the
// child; nil when no running child has the ID (a stray signal).
func (t *Tasks) Asked(a ChildAsk) *ChildInfo {
	var c *ChildInfo
	for _, id := range t.order {
		if t.children[id].ID == a.Child {
			c = t.children[id]
		}
	}
	if c == nil {
		return nil
	}
	c.Asks = slices.DeleteFunc(c.Asks, func(k ChildCall) bool { return k.CallID == a.CallID })
	if a.Outcome == "" && len(c.Asks) < maxChildAsks {
		c.Asks = append(c.Asks, ChildCall{CallID: a.CallID, Tool: a.Tool, Summary: a.Summary, Deadline: a.Deadline})
	}
	return c
}

// maxChildAsks bounds the waiting calls a parent lists for one child.
const maxChildAsks = 50

// AskText is the parent's journal line for a child's call: it waits (and
// how to answer it) or how it was decided.
func AskText(c *ChildInfo, a ChildAsk) string {
	child, call := display.Line(c.ID, 200), display.Line(a.CallID, 200)
	what := display.SafeLine(a.Summary)
	if a.Outcome != "" {
		return fmt.Sprintf("subagent %s (%s): its call %s %s %s", child, display.Line(c.Description, 200), call, what, display.Line(a.Outcome, 300))
	}
	return fmt.Sprintf("subagent %s (%s) waits for a person: call %s %s — answer: starter approve %s %s (or deny)",
		child, display.Line(c.Description, 200), call, what, child, call)
}

// Details is what the parent's Web UI adds of its running children and
// their waiting calls ("" when none runs).
func (t *Tasks) Details(decide string) string {
	if len(t.order) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Subagents (%d)\n\n", len(t.order))
	for _, c := range t.List() {
		state := "running"
		if c.Waiting {
			state = "waiting its turn"
		}
		fmt.Fprintf(&b, "- `%s` (%s), %s\n", code(c.ID), code(c.Description), state)
		for _, a := range c.Asks {
			fmt.Fprintf(&b, "  - waits for a person: `%s` — call `%s`: answer on the child (Update `%s` of workflow `%s`, or `starter approve %s %s`)\n",
				code(display.SafeLine(a.Summary)), code(a.CallID), decide, code(c.ID), code(c.ID), code(a.CallID))
		}
	}
	return b.String() + "\n"
}

// code is one line of display text for a markdown code span.
func code(s string) string { return strings.ReplaceAll(display.Line(s, 300), "`", "'") }

// TellParent signals a to the job's parent and waits until it is sent (the
// caller runs it on a context a cancellation does not reach).
func TellParent(ctx workflow.Context, parent string, a ChildAsk) {
	_ = workflow.SignalExternalWorkflow(ctx, parent, "", ChildAskSignal, a).Get(ctx, nil)
}

// OnChildAsk calls show with each ChildAsk the job receives, for the whole
// run.
func OnChildAsk(ctx workflow.Context, show func(workflow.Context, ChildAsk)) {
	ch := workflow.GetSignalChannel(ctx, ChildAskSignal)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var a ChildAsk
			if !ch.Receive(ctx, &a) || ctx.Err() != nil {
				return
			}
			show(ctx, a)
		}
	})
}
