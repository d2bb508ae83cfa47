package subagent

import (
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/approval"
)

// A parent's mode change reaches its running children, and only narrows
// them: each child's mode becomes the narrower of its own and the parent's
// new one, so a parent switched to plan stops its children's writes, while
// a parent widened (default to bypass) widens no child beyond the mode it
// started in or its definition's.

// ParentModeSignal carries a ParentMode from a parent to its running
// children. Anyone may send it: it can only narrow the child.
const ParentModeSignal = "parent-mode"

// ModeVersion marks histories in which a parent's mode change is signalled
// to its running children.
const ModeVersion = "task-mode"

// ParentMode is a parent's new mode, as its children are told.
type ParentMode struct {
	Mode    approval.Mode `json:"mode"`
	Parent  string        `json:"parent"`
	By      string        `json:"by,omitempty"`
	Channel string        `json:"channel,omitempty"`
}

// Narrower is the narrower of two modes (plan < dontAsk < default <
// acceptEdits < bypass).
func Narrower(a, b approval.Mode) approval.Mode {
	if modeRank(b) < modeRank(a) {
		return b
	}
	return a
}

// NarrowedBy is the mode a child in own takes when its parent switches to
// sent: the narrower of the two; ok is false when that is own (nothing
// changes) or sent is no mode.
func NarrowedBy(own approval.Mode, sent approval.Mode) (approval.Mode, bool) {
	m, err := approval.ParseMode(string(sent))
	if err != nil || sent == "" {
		return own, false
	}
	n := Narrower(own, m)
	return n, n != own
}

// Started remembers a started child, so a mode change of its parent
// reaches it.
func (t *Tasks) Started(callID string, f workflow.ChildWorkflowFuture) {
	if t.futures == nil {
		t.futures = map[string]workflow.ChildWorkflowFuture{}
	}
	t.futures[callID] = f
}

// TellMode signals p to every started child, each in its own coroutine
// (the signal is sent once the child has started), in the order they
// started; a child that has ended meanwhile is not told. Histories before
// ModeVersion told nobody.
func (t *Tasks) TellMode(ctx workflow.Context, p ParentMode) {
	if len(t.futures) == 0 || workflow.GetVersion(ctx, ModeVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	for _, id := range t.order {
		f := t.futures[id]
		if f == nil {
			continue
		}
		workflow.Go(ctx, func(ctx workflow.Context) {
			// An error is a child that has ended: it has no mode to narrow.
			_ = f.SignalChildWorkflow(ctx, ParentModeSignal, p).Get(ctx, nil)
		})
	}
}

// OnParentMode calls narrow with each ParentMode the job receives, for the
// whole run.
func OnParentMode(ctx workflow.Context, narrow func(workflow.Context, ParentMode)) {
	ch := workflow.GetSignalChannel(ctx, ParentModeSignal)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var p ParentMode
			if !ch.Receive(ctx, &p) || ctx.Err() != nil {
				return
			}
			narrow(ctx, p)
		}
	})
}
