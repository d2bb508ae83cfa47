package workflows

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/mcpargs"
)

// mcpVersion gates MCP: runs recorded before it list no MCP tools.
const mcpVersion = "mcp"

// mcpTools is what a run knows of its MCP tools (a replay rebuilds it from
// the listings in history; a continued run lists them again).
type mcpTools struct {
	hash  string
	order []string
	tools map[string]api.MCPTool
	// changed says, by tool, how its description or schema changed since
	// the job first saw it: every call to it then asks a person.
	changed map[string]string
	noted   map[string]bool
}

// listMCP lists the workspace's MCP tools before a model call (a server may
// have changed its list since the last one), and returns them as the
// model is offered them. A job whose settings name no server lists nothing.
func (j *job) listMCP(ctx workflow.Context) []openai.Tool {
	if len(j.st.MCPServers) == 0 || workflow.GetVersion(ctx, mcpVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	readDeny, _ := j.policy.SandboxDenies()
	actx := j.onHost(ctx, workflow.ActivityOptions{
		// Servers start on first use (an npx download is not among them:
		// there is no network unless the entry names domains).
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
		Summary:             "list the MCP servers' tools",
	})
	var res api.MCPToolsResult
	err := workflow.ExecuteActivity(actx, api.MCPToolsActivity, api.MCPToolsRequest{Workspace: j.in.Workspace,
		Network: j.st.Settings.Sandbox.Network, ReadDeny: readDeny, Have: j.mcp.hash}).Get(ctx, &res)
	if err != nil {
		j.noteMCP(ctx, "MCP tools could not be listed (the last list stands): "+err.Error())
	} else if !res.Same {
		j.takeMCP(ctx, res)
	}
	out := make([]openai.Tool, 0, len(j.mcp.order))
	for _, name := range j.mcp.order {
		t := j.mcp.tools[name]
		out = append(out, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	return out
}

// takeMCP takes a new listing: a tool seen before with another description
// or schema is marked changed, said in the events and the audit.
func (j *job) takeMCP(ctx workflow.Context, res api.MCPToolsResult) {
	prev := j.mcp.tools
	j.mcp.hash, j.mcp.order, j.mcp.tools = res.Hash, nil, map[string]api.MCPTool{}
	if j.mcp.changed == nil {
		j.mcp.changed = map[string]string{}
	}
	if j.st.MCPSeen == nil {
		j.st.MCPSeen = map[string]string{}
	}
	for _, t := range res.Tools {
		j.mcp.order = append(j.mcp.order, t.Name)
		j.mcp.tools[t.Name] = t
		fp := mcpargs.Fingerprint(t)
		seen, ok := j.st.MCPSeen[t.Name]
		switch {
		case !ok:
			j.st.MCPSeen[t.Name] = fp
		case seen != fp && j.mcp.changed[t.Name] == "":
			was := "(its earlier description is not in this run)"
			if old, ok := prev[t.Name]; ok {
				was = fmt.Sprintf("%q", old.Description)
			}
			why := fmt.Sprintf("the server changed %s since the job first saw it: its description was %s, now %q", t.Name, was, t.Description)
			j.mcp.changed[t.Name] = why
			j.audit(ctx, approval.AuditRecord{Event: "mcp-tool-changed", Tool: t.Name, Reason: why})
			j.emit(ctx, Event{Kind: "mcp", Tool: t.Name, Text: why})
		}
	}
	for _, n := range res.Notes {
		j.noteMCP(ctx, n)
	}
}

// noteMCP says a note about the servers once per run.
func (j *job) noteMCP(ctx workflow.Context, note string) {
	if j.mcp.noted == nil {
		j.mcp.noted = map[string]bool{}
	}
	if j.mcp.noted[note] {
		return
	}
	j.mcp.noted[note] = true
	j.audit(ctx, approval.AuditRecord{Event: "mcp", Reason: note})
	j.emit(ctx, Event{Kind: "mcp", Text: note})
}

// mcpCall is the call's tool when it is one of the job's MCP tools.
func (j *job) mcpCall(tool string) (api.MCPTool, bool) {
	t, ok := j.mcp.tools[tool]
	return t, ok
}

// mcpReadOnly: layer 2 may allow the tool (see approval.Call.MCPReadOnly).
// A changed tool never passes as read-only.
func (j *job) mcpReadOnly(t api.MCPTool) bool {
	return t.Trusted && t.ReadOnly && !t.Destructive && j.mcp.changed[t.Name] == ""
}

// refuseInvalidMCPArguments refuses, before anyone is asked, arguments the
// tool's input schema does not accept. The check's outcome is recorded
// (a side effect), so a later release's schema library cannot change a
// replayed decision.
func refuseInvalidMCPArguments(ctx workflow.Context, t api.MCPTool, input json.RawMessage, layer approval.Layer) (approval.Verdict, bool) {
	var why string
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		if err := api.CheckMCPArguments(t.InputSchema, input); err != nil {
			return err.Error()
		}
		return ""
	}).Get(&why)
	if why == "" {
		return approval.Verdict{}, false
	}
	return argumentsRefusal(layer, t.Name+" (its input schema)", why), true
}

// mcpStopVersion marks runs whose MCP calls an interrupt (or the job's
// end, cancellation) waits for: the activity returns once its server is
// killed, as Bash's does once its command is dead. Before it, the job
// went on at once and the call ran on in a server that might never answer.
const mcpStopVersion = "mcp-stop"

// runMCP runs an MCP call on the workspace's host. A call whose server (or
// worker) died while it ran is retried on a fresh server only for a
// read-only tool of a trusted server; any other may have had its effect,
// and the model is told it was interrupted. The activity may run for the
// server's callTimeout (it stops the call itself then) and a minute more
// to start the server.
func (j *job) runMCP(ctx workflow.Context, opts workflow.ActivityOptions, req api.ToolRequest, t api.MCPTool) (api.ToolResult, error) {
	retry := j.mcpReadOnly(t)
	opts.StartToCloseTimeout = cmp.Or(t.CallTimeout, defaultMCPCallTimeout) + time.Minute
	opts.HeartbeatTimeout = 20 * time.Second
	opts.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
	if retry {
		opts.RetryPolicy = &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3}
	}
	if workflow.GetVersion(ctx, mcpStopVersion, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		opts.WaitForCancellation = true
	}
	req.ReadDeny, _ = j.policy.SandboxDenies()
	var res api.ToolResult
	err := workflow.ExecuteActivity(j.onHost(ctx, opts), api.MCPCallActivity, api.MCPCallRequest{ToolRequest: req,
		Tool: t.Name, ReadOnly: retry, Network: j.st.Settings.Sandbox.Network}).Get(ctx, &res)
	if err == nil {
		return res, nil
	}
	var te *temporal.TimeoutError
	var ae *temporal.ApplicationError
	if !retry && (errors.As(err, &te) || errors.As(err, &ae) && ae.Type() == api.MCPInterruptedErrorType) {
		return res, fmt.Errorf("interrupted: the MCP server %q (or the worker running the call) stopped while the call ran; it may or may not have taken effect, and it was not run again", t.Server)
	}
	return res, fmt.Errorf("%s failed: %w", t.Name, err)
}

// defaultMCPCallTimeout is mcpservers.DefaultCallTimeout (the workflow
// does not import the package that runs servers).
const defaultMCPCallTimeout = 10 * time.Minute

// mcpStopped is what the model is told of an MCP call that an interrupt,
// the job's end or its cancellation stopped before the server answered.
func (j *job) mcpStopped(t api.MCPTool, why string) error {
	return fmt.Errorf("%s while it ran: the MCP call was stopped before the server %q answered; it may or may not have taken effect. The server was stopped and starts afresh for the next call", why, t.Server)
}

// mcpAsk makes a call to a changed tool ask a person, whatever the layers
// before allowed (only a deny stops it sooner), and shows whoever is asked
// the input as the tool's schema describes it.
func (j *job) mcpAsk(pre *approval.Prelim, t api.MCPTool, input json.RawMessage) {
	if pre.Verdict.Decision == approval.Deny {
		return
	}
	if why := j.mcp.changed[t.Name]; why != "" {
		if !pre.NeedsHuman {
			pre.AskReason = ""
		}
		pre.NeedsHuman = true
		pre.AskReason = strings.TrimSpace(why + "\n" + pre.AskReason)
	}
	if pre.NeedsHuman {
		pre.AskReason = strings.TrimSpace(pre.AskReason + "\n" + mcpargs.Describe(t, input))
	}
}

// acceptMCPChange: a person allowed a call to the tool as it is now, which
// is what the job holds it to from here.
func (j *job) acceptMCPChange(t api.MCPTool) {
	if j.mcp.changed[t.Name] == "" {
		return
	}
	delete(j.mcp.changed, t.Name)
	j.st.MCPSeen[t.Name] = mcpargs.Fingerprint(t)
}

// mcpToolsNamed names the job's MCP tools for an unknown tool's refusal.
func (j *job) mcpToolsNamed() string {
	if len(j.mcp.order) == 0 {
		return ""
	}
	return ", and the MCP tools " + strings.Join(j.mcp.order, ", ")
}

// mayBeMCP: tool is one of the job's MCP tools, or names one of its
// servers before the job listed their tools (the decision lists them, and
// refuses a tool the server does not have).
func (j *job) mayBeMCP(tool string) bool {
	if _, ok := j.mcpCall(tool); ok {
		return true
	}
	server, _, ok := approval.MCPTool(tool)
	return ok && j.mcp.hash == "" && slices.Contains(j.st.MCPServers, server)
}
