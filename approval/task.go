package approval

// TaskTool is the Task tool, which starts a subagent: a child job that
// works under its parent's rules and a mode no wider than its parent's,
// whose every call passes these layers again. Task is not read-only (the
// child may change files), but it gives nothing its parent lacks: the
// layers judge it by what it costs, a model's tokens, and by the mode.
//
//   - default: a person is asked (a rule "Task" in allow skips that);
//   - acceptEdits, bypass: allowed (the child runs in that mode at most,
//     its commands asked as the parent's are);
//   - plan: allowed (the child stays in plan mode and only reads);
//   - dontAsk: refused unless a rule allows it.
const TaskTool = "Task"

// taskModeLayer is layer 3 for a Task call; ok is false for other calls.
func taskModeLayer(m Mode, c Call) (Verdict, bool) {
	if c.Tool != TaskTool {
		return Verdict{}, false
	}
	switch m {
	case ModePlan:
		return Verdict{Decision: Allow, Layer: LayerMode, Reason: "plan mode: the subagent stays in plan mode and only reads"}, true
	case ModeAcceptEdits:
		return Verdict{Decision: Allow, Layer: LayerMode, Reason: "acceptEdits mode: the subagent works in acceptEdits mode at most"}, true
	}
	return Verdict{}, false
}

// planAllows is what plan mode lets run: read-only calls, and Task, whose
// child is in plan mode too.
func (c Call) planAllows() bool { return c.readOnly() || c.Tool == TaskTool }
