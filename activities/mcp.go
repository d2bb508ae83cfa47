package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/checkpoint"
	"github.com/custos-dev/custos/mcpservers"
	"github.com/custos-dev/custos/sandbox/pathguard"
)

// MCP serves the MCP activities from a worker's pool of servers.
type MCP struct {
	Pool *mcpservers.Pool
	// HeartbeatInterval is how often a call heartbeats; 0: every second.
	HeartbeatInterval time.Duration
}

// Tools lists the tools of the workspace's servers, starting them as needed.
func (m *MCP) Tools(ctx context.Context, req api.MCPToolsRequest) (api.MCPToolsResult, error) {
	tools, notes, err := m.Pool.ToolsFor(ctx, req.Workspace, req.Job, mcpservers.Limits{Network: req.Network, ReadDeny: req.ReadDeny, EditDeny: req.EditDeny})
	if err != nil {
		return api.MCPToolsResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "MCPSettingsError", err)
	}
	out := api.MCPToolsResult{Notes: notes}
	for _, t := range tools {
		out.Tools = append(out.Tools, api.MCPTool{Name: t.FullName, Server: t.Server, Tool: t.Name,
			Description: t.Description, InputSchema: t.InputSchema, ReadOnly: t.ReadOnly,
			Destructive: t.Destructive, Trusted: t.Trusted, CallTimeout: t.CallTimeout})
	}
	b, _ := json.Marshal(out)
	sum := sha256.Sum256(b)
	out.Hash = hex.EncodeToString(sum[:12])
	if out.Hash == req.Have {
		return api.MCPToolsResult{Hash: out.Hash, Same: true}, nil
	}
	return out, nil
}

// Call calls one tool. A server's refusal or failure is a tool result for
// the model; a server that died while the call ran is an activity error:
// retried (on a fresh server) for a read-only tool, reported as
// interrupted for any other, which may have had its effect. A call that
// outlasts its server's callTimeout is a result saying so; a canceled
// one (an interrupt: the cancellation comes with a heartbeat's answer)
// returns at once, its server killed, answered or not.
func (m *MCP) Call(ctx context.Context, req api.MCPCallRequest) (api.ToolResult, error) {
	server, tool, ok := approval.MCPTool(req.Tool)
	if !ok {
		return toolkit.ErrorResult("%q is not an MCP tool's name", req.Tool), nil
	}
	tr, failed := toolkit.WithBlobs(req.Tool, req.ToolRequest)
	if failed != nil {
		return *failed, nil
	}
	every := m.HeartbeatInterval
	if every <= 0 {
		every = time.Second
	}
	wctx, writes, release, err := m.writingCall(ctx, tr, server, tool)
	if err != nil {
		return api.ToolResult{}, err
	}
	ckpt := m.noteCheckpoint(tr, server, tool)
	stop := toolkit.HeartbeatAfter(ctx, every, func() any { return req.Tool })
	res, err := m.Pool.CallFor(wctx, tr.Workspace, tr.JobID, server, tool, tr.Input, mcpservers.Limits{Network: req.Network, ReadDeny: req.ReadDeny, EditDeny: req.EditDeny})
	stop()
	release()
	if ckpt != nil {
		// Done whatever the call did: the server may have acted before it
		// failed, and the note holds either way.
		_ = ckpt.Done()
		ckpt.Close()
	}
	var timedOut *mcpservers.TimeoutError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		// Interrupted, ended or canceled: the server is killed by now, and
		// the workflow tells the model who stopped the call.
		return api.ToolResult{}, ctx.Err()
	case errors.As(err, &timedOut):
		return withWrites(toolkit.ErrorResult("%v: the call was stopped; it may or may not have taken effect. The server was stopped and starts afresh for the next call.", err), writes), nil
	case errors.Is(err, mcpservers.ErrServerDied) && req.ReadOnly:
		return api.ToolResult{}, temporal.NewApplicationError(err.Error(), "MCPServerDied")
	case errors.Is(err, mcpservers.ErrServerDied):
		return api.ToolResult{}, temporal.NewNonRetryableApplicationError(err.Error(), api.MCPInterruptedErrorType, err)
	default:
		return withWrites(toolkit.ErrorResult("%v", err), writes), nil
	}
	out, truncated := toolkit.CapHead(renderResult(res), toolkit.MaxOutput(req.ToolRequest))
	return withWrites(api.ToolResult{Output: out, IsError: res.IsError, Truncated: truncated}, writes), nil
}

// renderResult is a call's result as text for the model: text as it is,
// structured content as JSON, and what text cannot carry named.
func renderResult(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource: %s %s]", c.Name, c.URI))
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource: %s, %d bytes, not shown]", c.Resource.URI, len(c.Resource.Blob)))
			}
		default:
			parts = append(parts, "[content of a kind custos does not show]")
		}
	}
	if res.StructuredContent != nil && len(parts) == 0 {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 {
		return "(no content)"
	}
	return strings.Join(parts, "\n")
}

// noteCheckpoint records, before the call, that what the server does
// cannot be undone: changes and rewind then say so under the call (the
// server changes nothing in the workspace, which it sees read-only).
func (m *MCP) noteCheckpoint(req api.ToolRequest, server, tool string) *checkpoint.Recording {
	ws, err := pathguard.CanonicalWorkspace(req.Workspace)
	if err != nil {
		return nil
	}
	r, err := toolkit.StartCheckpoint(req, approval.MCPPrefix+server+"__"+tool, "MCP server "+server+", tool "+tool, ws)
	if r == nil || err != nil {
		return nil
	}
	r.Note(fmt.Sprintf("an MCP call: what the server %q did through its tool %q (in its own systems, over the network) is not undone by a rewind", server, tool))
	if err := r.Commit(); err != nil {
		r.Close()
		return nil
	}
	return r
}
