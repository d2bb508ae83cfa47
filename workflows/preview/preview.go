// Package preview shows a person what a call that asks would do: a Write's
// or an Edit's diff from a dry run on the workspace's host, a Bash
// command's parsed commands and sandbox. It never imports workflows.
package preview

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/approval/shell"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/workflows/calltext"
)

// maxPreviewLine bounds one line of a preview, in characters: a longer one
// shows its head and its tail.
const maxPreviewLine = 2000

// A Bash preview shows the command's text when it spans lines, holds
// anything escaped or is longer than maxInlineCommand bytes; of a command
// longer than maxPreviewCommandLines lines, the head and the tail.
const (
	maxInlineCommand       = 80
	maxPreviewCommandLines = 60
)

// Of shows a person what the call would do. Write and Edit run a dry
// run on the host of the workspace (a read: nothing is written); Bash is
// shown as the parsed commands, why it asks and what the sandbox allows.
// It is display text (package display): what the model wrote is escaped,
// and every channel shows it as it is.
// onHost is the activity context on the workspace's host; call the
// request a Write or an Edit would run as (its Input aside); env and sb
// the job's.
func Of(ctx workflow.Context, onHost func(workflow.Context, workflow.ActivityOptions) workflow.Context,
	call api.ToolRequest, rec approval.AuditRecord, reason string, env approval.Env, sb approval.SandboxSettings) string {
	switch rec.Tool {
	case api.WriteActivity, api.EditActivity:
		actx := onHost(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 30 * time.Second,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
			Summary:             "preview " + calltext.UISummary(rec.Tool, rec.Input),
		})
		call.CallID, call.Input = rec.CallID, rec.Input
		var res api.PreviewResult
		err := workflow.ExecuteActivity(actx, api.PreviewActivity, api.PreviewRequest{Tool: rec.Tool, Call: call}).Get(ctx, &res)
		if err != nil {
			return display.Line(fmt.Sprintf("(no preview: %v)", err), maxPreviewLine)
		}
		// The diff shows the file's content: escaped like any text the
		// model chose.
		return display.Block(res.Text(), 0, maxPreviewLine)
	case api.BashActivity:
		return Bash(rec.Input, reason, env, sb)
	}
	return ""
}

// Bash is pure: the commands as the rule engine parsed them, why the
// call asks, and what the sandbox will let the command do.
func Bash(input json.RawMessage, reason string, env approval.Env, sb approval.SandboxSettings) string {
	var in struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(input, &in)
	a := shell.Analyze(in.Command, shell.Env{Workspace: env.Workspace, Home: env.Home})
	var b strings.Builder
	if display.Line(in.Command, 0) != in.Command || len(in.Command) > maxInlineCommand {
		// The summary shows such a command shortened, or on one line: here
		// is its text, line by line, before the commands parsed from it.
		b.WriteString("Command:\n")
		for _, l := range strings.Split(display.Block(in.Command, maxPreviewCommandLines, maxPreviewLine), "\n") {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	b.WriteString("Commands:\n")
	line := func(s string) string { return display.Line(s, maxPreviewLine) }
	for _, c := range a.Commands {
		fmt.Fprintf(&b, "  %s\n", line(c.Raw))
	}
	if len(a.Commands) == 0 {
		b.WriteString("  (none found)\n")
	}
	for _, u := range a.Undecidable {
		fmt.Fprintf(&b, "Cannot be decided statically: %s\n", line(u))
	}
	for _, t := range a.WriteTargets {
		fmt.Fprintf(&b, "Writes: %s\n", line(t))
	}
	if reason != "" {
		fmt.Fprintf(&b, "Asks because: %s\n", line(reason))
	}
	fmt.Fprintf(&b, "Sandbox: writable: the workspace %s (protected paths such as .git/hooks, .git/config and .custos stay read-only) and a private /tmp\n", line(env.Workspace))
	if d := sb.Network.AllowedDomains; len(d) > 0 {
		fmt.Fprintf(&b, "Network: only %s\n", line(strings.Join(d, ", ")))
	} else {
		b.WriteString("Network: none\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
