package activities

import (
	"context"
	"fmt"
	"sync"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/mcpservers"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/sandbox/pathguard"
)

// workspaceLanes runs a writing MCP server's calls one at a time with the
// workspace's Bash commands in this worker (whose lanes already run those
// one at a time): the host guard judges a server's writes against a
// snapshot taken before its call, which a command applying its own writes
// meanwhile would blur, and neither applies its writes under the other.
var workspaceLanes = &laneLocks{held: map[string]chan struct{}{}}

type laneLocks struct {
	mu   sync.Mutex
	held map[string]chan struct{}
}

// acquire waits for workspace ws's lane (or ctx's end); release frees it.
func (l *laneLocks) acquire(ctx context.Context, ws string) (release func(), err error) {
	if c, err := pathguard.CanonicalWorkspace(ws); err == nil {
		ws = c
	}
	l.mu.Lock()
	ch := l.held[ws]
	if ch == nil {
		ch = make(chan struct{}, 1)
		l.held[ws] = ch
	}
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the workspace's running command: %w", ctx.Err())
	}
}

// writingCall readies a call of a server whose entry says writeWorkspace:
// it waits for the workspace's lane, and its writes are recorded in the
// job's checkpoint as a Bash command's are before they are applied. For
// any other server it is ctx as it is.
func (m *MCP) writingCall(ctx context.Context, tr api.ToolRequest, server, tool string) (context.Context, *mcpservers.Writes, func(), error) {
	if !m.Pool.WritesWorkspace(tr.Workspace, server) {
		return ctx, nil, func() {}, nil
	}
	release, err := workspaceLanes.acquire(ctx, tr.Workspace)
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
