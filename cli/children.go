package cli

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// statusFamily prints a subagent's parent and a job's running subagents
// with their waiting calls (each child is a job: its calls are answered by
// its own ID).
func (a *App) statusFamily(ctx context.Context, c client.Client, st jobapi.Status) {
	if p := st.Parent; p != nil {
		fmt.Fprintf(a.Stdout, "parent:    %s (its call %s, depth %d)\n", display.Line(p.Job, maxID), shownID(p.CallID), p.Depth)
	}
	for _, ch := range st.Children {
		what := "running"
		if ch.Waiting {
			what = "waiting its turn"
		}
		fmt.Fprintf(a.Stdout, "subagent:  %s (%s): %s, %s\n", display.Line(ch.ID, maxID), display.Line(ch.Description, 100), shownID(ch.CallID), what)
		cst, err := queryStatus(ctx, c, ch.ID)
		if err != nil {
			continue
		}
		for _, p := range cst.Pending {
			fmt.Fprintf(a.Stdout, "           pending: %s: %s\n           starter approve %s %s   |   starter deny %s %s\n",
				shownID(p.CallID), display.SafeLine(p.Summary), ch.ID, shownID(p.CallID), ch.ID, shownID(p.CallID))
		}
	}
}
