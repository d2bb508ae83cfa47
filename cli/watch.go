package cli

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/inbox"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// watch attaches to a running job, whichever host started it: its events as
// they happen and, on a terminal, a prompt for each pending call. With no
// job it watches every job that waits for someone.
func (a *App) watch(ctx context.Context, args []string) error {
	if len(args) > 1 {
		return usagef("watch [JOB]")
	}
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if len(args) == 1 {
		if err := ensureRunning(ctx, c, args[0], "watch"); err != nil {
			return err
		}
		return a.follow(ctx, c, args[0], 0)
	}
	return a.watchAll(ctx, c)
}

// watchPoll is how often watchAll looks for jobs that wait.
const watchPoll = time.Second

// watchAll prompts, one call at a time, for every pending call of every
// running job, until ctx ends.
func (a *App) watchAll(ctx context.Context, c client.Client) error {
	stop := make(chan struct{})
	defer close(stop)
	lines := a.typedLines(stop)
	fmt.Fprintln(a.Stderr, "custos: watching every job that waits for approval (Ctrl-C to stop)")
	seen := map[string]bool{} // job/call
	tick := time.NewTicker(watchPoll)
	defer tick.Stop()
	for {
		ids, err := runningJobs(ctx, c)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(a.Stderr, "custos: list jobs: %v\n", err)
		}
		for _, id := range ids {
			st, err := queryStatus(ctx, c, id)
			if err != nil {
				continue
			}
			for _, p := range st.Pending {
				key := id + "/" + p.CallID
				if seen[key] {
					continue
				}
				seen[key] = true
				fmt.Fprintf(a.Stdout, "\n[%s]%s %s\n    %s: waiting for approval: %s\n", display.Line(id, maxID), subagentOf(st), taskLine(st.Task, 80), shownID(p.CallID), display.SafeLine(p.Summary))
				if !a.Interactive {
					if p.Preview != "" {
						fmt.Fprintln(a.Stdout, indent(display.Safe(p.Preview), "    │ "))
					}
					fmt.Fprintf(a.Stdout, "      decide with: starter approve %s %s   |   starter deny %s %s\n", id, shownID(p.CallID), id, shownID(p.CallID))
					continue
				}
				if err := a.prompt(ctx, c, id, p, lines, nil); err != nil {
					return err
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// subagentOf names a subagent's parent (" subagent of job P (call C):"),
// "" for a job of its own.
func subagentOf(st jobapi.Status) string {
	if st.Parent == nil {
		return ""
	}
	return fmt.Sprintf(" subagent of job %s (its call %s):", display.Line(st.Parent.Job, maxID), shownID(st.Parent.CallID))
}

// runningJobs lists the running custos jobs' IDs, oldest first.
func runningJobs(ctx context.Context, c client.Client) ([]string, error) {
	jobs, err := inbox.RunningJobs(ctx, c)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out, nil
}
