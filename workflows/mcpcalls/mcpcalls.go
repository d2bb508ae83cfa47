// Package mcpcalls holds what the job's workflow knows and does of its MCP
// tools: the listing before each model call (a tool that changed since the
// job first saw it asks a person for every call), running a call on the
// workspace's host, and what the model and the person asked are told. It
// never imports workflows; the job hands it a Host.
package mcpcalls

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
	"github.com/custos-dev/custos/workflows/jobapi"
	"github.com/custos-dev/custos/workflows/mcpargs"
)

// Version gates MCP: runs recorded before it list no MCP tools.
const Version = "mcp"

// Tools is what a run knows of its MCP tools (a replay rebuilds it from
// the listings in history; a continued run lists them again).
type Tools struct {
	hash  string
	order []string
	tools map[string]api.MCPTool
	// changed says, by tool, how its description or schema changed since
	// the job first saw it: every call to it then asks a person.
	changed map[string]string
	noted   map[string]bool
}

// Host is what of the job its MCP tools read and change: its state (the
// servers, the tools seen), the paths its sandbox hides from reads, the
// activity context on the workspace's host, its audit and its journal
// (Say: an mcp event about tool, "" for none).
type Host struct {
	State     func() *jobapi.State
	ReadDeny  func() []string
	EditDeny  func() []string
	OnHost    func(ctx workflow.Context, opts workflow.ActivityOptions) workflow.Context
	Workspace string
	// Job is the job's ID when an editor passed it MCP servers (they join
	// the workspace's), else "".
	Job   string
	Audit func(ctx workflow.Context, r approval.AuditRecord)
	Say   func(ctx workflow.Context, tool, text string)
}

// List lists the workspace's MCP tools before a model call (a server may
// have changed its list since the last one), and returns them as the
// model is offered them. A job whose settings name no server lists nothing.
func (m *Tools) List(ctx workflow.Context, h Host) []openai.Tool {
	st := h.State()
	if len(st.MCPServers) == 0 || workflow.GetVersion(ctx, Version, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	readDeny, editDeny := h.ReadDeny(), h.editDeny()
	actx := h.OnHost(ctx, workflow.ActivityOptions{
		// Servers start on first use (an npx download is not among them:
		// there is no network unless the entry names domains).
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
		Summary:             "list the MCP servers' tools",
	})
	var res api.MCPToolsResult
	err := workflow.ExecuteActivity(actx, api.MCPToolsActivity, api.MCPToolsRequest{Workspace: h.Workspace,
		Network: st.Settings.Sandbox.Network, ReadDeny: readDeny, EditDeny: editDeny, Have: m.hash, Job: h.Job}).Get(ctx, &res)
	if err != nil {
		m.Note(ctx, h, "MCP tools could not be listed (the last list stands): "+err.Error())
	} else if !res.Same {
		m.take(ctx, h, res)
	}
	out := make([]openai.Tool, 0, len(m.order))
	for _, name := range m.order {
		t := m.tools[name]
		out = append(out, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	return out
}

// take takes a new listing: a tool seen before with another description
// or schema is marked changed, said in the events and the audit.
func (m *Tools) take(ctx workflow.Context, h Host, res api.MCPToolsResult) {
	st := h.State()
	prev := m.tools
	m.hash, m.order, m.tools = res.Hash, nil, map[string]api.MCPTool{}
	if m.changed == nil {
		m.changed = map[string]string{}
	}
	if st.MCPSeen == nil {
		st.MCPSeen = map[string]string{}
	}
	for _, t := range res.Tools {
		m.order = append(m.order, t.Name)
		m.tools[t.Name] = t
		fp := mcpargs.Fingerprint(t)
		seen, ok := st.MCPSeen[t.Name]
		switch {
		case !ok:
			st.MCPSeen[t.Name] = fp
		case seen != fp && m.changed[t.Name] == "":
			was := "(its earlier description is not in this run)"
			if old, ok := prev[t.Name]; ok {
				was = fmt.Sprintf("%q", old.Description)
			}
			why := fmt.Sprintf("the server changed %s since the job first saw it: its description was %s, now %q", t.Name, was, t.Description)
			m.changed[t.Name] = why
			h.Audit(ctx, approval.AuditRecord{Event: "mcp-tool-changed", Tool: t.Name, Reason: why})
			h.Say(ctx, t.Name, why)
		}
	}
	for _, n := range res.Notes {
		m.Note(ctx, h, n)
	}
}

// Note says a note about the servers once per run.
func (m *Tools) Note(ctx workflow.Context, h Host, note string) {
	if m.noted == nil {
		m.noted = map[string]bool{}
	}
	if m.noted[note] {
		return
	}
	m.noted[note] = true
	h.Audit(ctx, approval.AuditRecord{Event: "mcp", Reason: note})
	h.Say(ctx, "", note)
}

// Get is the call's tool when it is one of the job's MCP tools.
func (m *Tools) Get(tool string) (api.MCPTool, bool) {
	t, ok := m.tools[tool]
	return t, ok
}

// ReadOnly: layer 2 may allow the tool (see approval.Call.MCPReadOnly).
// A changed tool never passes as read-only.
func (m *Tools) ReadOnly(t api.MCPTool) bool {
	return t.Trusted && t.ReadOnly && !t.Destructive && m.changed[t.Name] == ""
}

// mcpStopVersion marks runs whose MCP calls an interrupt (or the job's
// end, cancellation) waits for: the activity returns once its server is
// killed, as Bash's does once its command is dead. Before it, the job
// went on at once and the call ran on in a server that might never answer.
const mcpStopVersion = "mcp-stop"

// Run runs an MCP call on the workspace's host. A call whose server (or
// worker) died while it ran is retried on a fresh server only for a
// read-only tool of a trusted server; any other may have had its effect,
// and the model is told it was interrupted. The activity may run for the
// server's callTimeout (it stops the call itself then) and a minute more
// to start the server.
func (m *Tools) Run(ctx workflow.Context, h Host, opts workflow.ActivityOptions, req api.ToolRequest, t api.MCPTool) (api.ToolResult, error) {
	retry := m.ReadOnly(t)
	opts.StartToCloseTimeout = cmp.Or(t.CallTimeout, defaultMCPCallTimeout) + time.Minute
	opts.HeartbeatTimeout = 20 * time.Second
	opts.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
	if retry {
		opts.RetryPolicy = &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3}
	}
	if workflow.GetVersion(ctx, mcpStopVersion, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		opts.WaitForCancellation = true
	}
	req.ReadDeny, req.EditDeny = h.ReadDeny(), h.editDeny()
	var res api.ToolResult
	err := workflow.ExecuteActivity(h.OnHost(ctx, opts), api.MCPCallActivity, api.MCPCallRequest{ToolRequest: req,
		Tool: t.Name, ReadOnly: retry, Network: h.State().Settings.Sandbox.Network}).Get(ctx, &res)
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

// Stopped is what the model is told of an MCP call that an interrupt,
// the job's end or its cancellation stopped before the server answered.
func Stopped(t api.MCPTool, why string) error {
	return fmt.Errorf("%s while it ran: the MCP call was stopped before the server %q answered; it may or may not have taken effect. The server was stopped and starts afresh for the next call", why, t.Server)
}

// Ask makes a call to a changed tool ask a person, whatever the layers
// before allowed (only a deny stops it sooner), and shows whoever is asked
// the input as the tool's schema describes it.
func (m *Tools) Ask(pre *approval.Prelim, t api.MCPTool, input json.RawMessage) {
	if pre.Verdict.Decision == approval.Deny {
		return
	}
	if why := m.changed[t.Name]; why != "" {
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

// AcceptChange: a person allowed a call to the tool as it is now, which
// is what the job holds it to from here.
func (m *Tools) AcceptChange(t api.MCPTool, seen map[string]string) {
	if m.changed[t.Name] == "" {
		return
	}
	delete(m.changed, t.Name)
	seen[t.Name] = mcpargs.Fingerprint(t)
}

// Named names the job's MCP tools for an unknown tool's refusal.
func (m *Tools) Named() string {
	if len(m.order) == 0 {
		return ""
	}
	return ", and the MCP tools " + strings.Join(m.order, ", ")
}

// MayBe: tool is one of the job's MCP tools, or names one of its
// servers before the job listed their tools (the decision lists them, and
// refuses a tool the server does not have).
func (m *Tools) MayBe(tool string, servers []string) bool {
	if _, ok := m.Get(tool); ok {
		return true
	}
	server, _, ok := approval.MCPTool(tool)
	return ok && m.hash == "" && slices.Contains(servers, server)
}

// Listed says whether the run has listed its MCP tools.
func (m *Tools) Listed() bool { return m.hash != "" }

// Changed says how tool changed since the job first saw it, "" if not.
func (m *Tools) Changed(tool string) string { return m.changed[tool] }

// editDeny are the job's Edit deny patterns, which a server that writes
// the workspace is held to as a Bash command is (nil EditDeny: none).
func (h Host) editDeny() []string {
	if h.EditDeny == nil {
		return nil
	}
	return h.EditDeny()
}
