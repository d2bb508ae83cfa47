package activities

import (
	"context"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/mcpservers"
	"github.com/custos-dev/custos/sandbox"
)

// writingCall readies a call of a server whose entry says writeWorkspace:
// it waits for the workspace's lane (toolkit.WorkspaceLanes), and its
// writes are recorded in the job's checkpoint as a Bash command's are
// before they are applied. For any other server it is ctx as it is.
func (m *MCP) writingCall(ctx context.Context, tr api.ToolRequest, server, tool string) (context.Context, *mcpservers.Writes, func(), error) {
	if !m.Pool.WritesWorkspace(tr.Workspace, tr.JobID, server) {
		return ctx, nil, func() {}, nil
	}
	release, err := toolkit.WorkspaceLanes.Acquire(ctx, tr.Workspace)
	if err != nil {
		return ctx, nil, nil, err
	}
	ck := &bashCheckpoint{t: &Tools{}, req: tr, what: "MCP server " + server + ", tool " + tool,
		tool: approval.MCPPrefix + server + "__" + tool}
	wctx, w := mcpservers.WithWrites(ctx, ck.hook())
	return wctx, w, release, nil
}

// withWrites tells the model what the host guard did with what a writing
// server's call wrote, as a Bash command's result does; writes that could
// not be applied make the result an error.
func withWrites(out api.ToolResult, w *mcpservers.Writes) api.ToolResult {
	if w == nil || !w.Wrote {
		return out
	}
	if n := w.Report.HostConfigNote(); n != "" {
		out.Output += "\n[workspace: " + n + "]"
	}
	out.HostConfig = hostConfigLines(sandbox.Result{Report: w.Report})
	out.IsError = out.IsError || w.Report.Unmerged != ""
	return out
}
