package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/jobstart"
	"github.com/custos-dev/custos/sandbox/pathguard"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// tool runs one tool call of the person's own through the six layers the
// model's calls go through: `starter tool [--workspace DIR] [--mode M]
// TOOL 'JSON'` as a job of its own, `starter tool JOB TOOL 'JSON'` inside a
// job's conversation. A person is asked (here on a terminal, or on any
// channel) when the policy says so; the audit names the person.
func (a *App) tool(ctx context.Context, args []string) error {
	fs := newFlagSet("tool", a.Stderr)
	workspace := fs.String("workspace", ".", "the workspace (for a call outside a job)")
	mode := fs.String("mode", "", "permission mode (for a call outside a job; default: settings)")
	timeout := fs.Duration("approval-timeout", jobapi.DefaultApprovalTimeout, "how long the call waits for a person before it is denied")
	by := fs.String("by", app.OSUser(), "who makes the call (recorded in the audit)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	var job string
	if len(pos) == 3 {
		job, pos = pos[0], pos[1:]
	}
	if len(pos) != 2 {
		return usagef(`tool: starter tool [JOB] TOOL 'JSON', e.g. starter tool Bash '{"command": "npm test"}'`)
	}
	call := jobapi.UserCall{Tool: pos[0], Input: json.RawMessage(pos[1]), By: *by, Channel: "cli"}
	if _, _, mcp := approval.MCPTool(call.Tool); !api.KnownTool(call.Tool) && !mcp {
		return usagef("tool: unknown tool %q (the tools are %s, and the job's MCP tools, mcp__SERVER__TOOL)", call.Tool, strings.Join(api.ToolNames(), ", "))
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(call.Input, &obj) != nil || obj == nil {
		return usagef("tool: the input is not a JSON object: %s", display.Line(pos[1], maxReason))
	}
	if *mode != "" {
		if _, err := approval.ParseMode(*mode); err != nil {
			return usagef("tool: %v", err)
		}
	}
	s, err := a.connectOrEmbed(ctx, defaultModelOptions())
	if err != nil {
		return err
	}
	defer s.Close()
	a.inProcess = s.workers != nil
	if job != "" {
		return a.toolInJob(ctx, s.client, job, call)
	}
	ws, err := pathguard.CanonicalWorkspace(*workspace)
	if err != nil {
		return err
	}
	in := jobapi.JobInput{Task: "a tool call of " + *by + "'s own: " + api.Summarize(call.Tool, call.Input), Workspace: ws,
		Mode: approval.Mode(*mode), ApprovalTimeout: *timeout, Once: true, Call: &call, WorkDir: workDirIn(ws),
		Owner: identities(os.Getenv(EnvIdentity))}
	if s.workers == nil {
		if in.Host, err = app.RouteJob(ctx, s.client, ws); err != nil {
			return err
		}
	}
	run, err := jobstart.Start(ctx, s.client, newJobID(), in, jobstart.Options{})
	if err != nil {
		return fmt.Errorf("start the call: %w", err)
	}
	fmt.Fprintf(a.Stderr, "custos: your call runs as job %s in %s\n", run.GetID(), ws)
	return a.follow(ctx, s.client, run.GetID(), 0)
}

// toolInJob runs the call in a job's conversation, prompting on the
// terminal when it waits for a person, and prints its result.
func (a *App) toolInJob(ctx context.Context, c client.Client, id string, call jobapi.UserCall) error {
	type outcome struct {
		res jobapi.UserCallResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := update[jobapi.UserCallResult](ctx, c, id, jobapi.ToolUpdate, call)
		done <- outcome{res, err}
	}()
	stop := make(chan struct{})
	defer close(stop)
	lines := a.typedLines(stop)
	finished := make(chan struct{})
	prompted := map[string]bool{}
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case o := <-done:
			close(finished)
			if o.err != nil {
				if !errors.Is(o.err, errNotApplied) {
					o.err = fmt.Errorf("tool call in %s: %w", id, o.err)
				}
				return o.err
			}
			fmt.Fprintf(a.Stderr, "custos: %s %s at layer %s (call %s)\n", call.Tool, o.res.Decision, o.res.Layer, shownID(o.res.CallID))
			fmt.Fprintln(a.Stdout, display.Safe(o.res.Output))
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		st, err := queryStatus(ctx, c, id)
		if err != nil {
			continue
		}
		for _, p := range st.Pending {
			if prompted[p.CallID] || !strings.HasPrefix(p.CallID, "user_") {
				continue
			}
			prompted[p.CallID] = true
			if !a.Interactive {
				fmt.Fprintf(a.Stdout, "    %s waits for approval: starter approve %s %s   |   starter deny %s %s\n", shownID(p.CallID), id, shownID(p.CallID), id, shownID(p.CallID))
				continue
			}
			if err := a.prompt(ctx, c, id, p, lines, finished); err != nil {
				return err
			}
		}
	}
}
