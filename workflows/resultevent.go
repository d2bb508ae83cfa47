package workflows

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/workflows/calltext"
)

// maxEventOutputs bounds the results in the journal that keep an excerpt
// and a diff (a few KiB each): older ones keep their first line.
const maxEventOutputs = 64

// resultEvent is a ran call's journal event: its first line, an excerpt of
// its output, a Write's or Edit's change (nothing the workflow decides).
func resultEvent(id, tool string, input json.RawMessage, out string, res api.ToolResult) Event {
	e := Event{Kind: "result", CallID: id, Tool: tool, Text: calltext.FirstLine(out, 160), Failed: res.IsError,
		Output: api.Excerpt(out, api.ExcerptKeep), OutputBytes: len(out)}
	if !res.IsError {
		e.Diff = api.ChangeOf(tool, input, res)
	}
	return e
}

// emitResult journals a result; the oldest past maxEventOutputs loses its
// excerpt.
func (j *job) emitResult(ctx workflow.Context, e Event) {
	j.emit(ctx, e)
	kept := 0
	for i := len(j.events) - 1; i >= 0; i-- {
		ev := &j.events[i]
		if ev.Output == "" && ev.Diff == nil {
			continue
		}
		if kept++; kept > maxEventOutputs {
			ev.Output, ev.Diff = "", nil
			return
		}
	}
}
