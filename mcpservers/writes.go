package mcpservers

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/sandbox/hostguard"
)

// A server whose entry says "writeWorkspace": true writes the workspace as
// a Bash command does, never straight. It sees the workspace through an
// overlay of its own (sandbox.ServiceOverlays, in the state directory),
// with the protected paths and the Edit deny rules read-only over it; each
// call is watched by the host guard (the snapshot before it), and once the
// call ended, what the overlay's upper layer holds is judged by the same
// code that judges a command's writes (protected names withheld,
// version-control files checked on the merged view), recorded in the
// job's checkpoint (the caller's MergeHook) and only then applied. An
// upper layer cannot be emptied while it is mounted, so a call that wrote
// anything stops its server first: the next call starts it afresh (its
// home keeps its state). The caller runs these calls one at a time with
// the workspace's Bash commands.

// Writes is what a writing server's call did to the workspace.
type Writes struct {
	// Wrote: the server wrote something, which was judged (Report) and
	// the server stopped.
	Wrote  bool
	Report hostguard.Report
}

// writesKey carries a call's MergeHook and where its Writes go.
type writesKey struct{}

type writesCtx struct {
	hook hostguard.MergeHook
	out  *Writes
}

// WithWrites is ctx for a call whose server may write the workspace:
// beforeMerge (nil: none) is told of its writes before they are applied,
// and the returned Writes says, once Call returned, what it wrote and what
// the host guard did with it.
func WithWrites(ctx context.Context, beforeMerge hostguard.MergeHook) (context.Context, *Writes) {
	w := &Writes{}
	return context.WithValue(ctx, writesKey{}, writesCtx{hook: beforeMerge, out: w}), w
}

// WritesWorkspace says whether the server of the workspace (or of job's
// editor: never) writes it; false for one that is not configured.
func (p *Pool) WritesWorkspace(ws, job, server string) bool {
	cfg, err := p.loadFor(ws, job)
	if err != nil {
		return false
	}
	for _, s := range cfg.Servers {
		if s.Name == server {
			return s.WriteWorkspace
		}
	}
	return false
}

// serverOverlays are the running writing servers' overlay directories.
var serverOverlays sync.Map // *sandbox.Process -> string

// startRequest is a stdio server's sandbox request: the workspace
// read-only, or, for a server that writes it, through an overlay of its
// own (made here) with the Edit deny rules read-only.
func (p *Pool) startRequest(req sandbox.Request, srv Server, lim Limits) (sandbox.Request, error) {
	if !srv.WriteWorkspace {
		req.ReadOnlyWorkspace = true
		return req, nil
	}
	svc, real, err := sandbox.ServiceOverlays(p.Sandbox, req.Workspace)
	if err != nil {
		return req, err
	}
	dir, err := svc.NewOverlay(real)
	if err != nil {
		return req, err
	}
	req.ReadOnlyWorkspace, req.ServiceOverlay, req.EditDeny = false, dir, lim.EditDeny
	return req, nil
}

// started records a writing server's overlay for its calls, and removes
// it when the server could not start (never mounted). One whose server
// ends between calls (the pool closed, its entry changed) stays for the
// host guard's sweep when this process next starts, which applies what is
// in it, failing closed.
func started(proc *sandbox.Process, req sandbox.Request, err error) {
	if req.ServiceOverlay == "" {
		return
	}
	if err != nil {
		hostguard.DropOverlay(req.ServiceOverlay)
		return
	}
	serverOverlays.Store(proc, req.ServiceOverlay)
	go func() {
		<-proc.Done()
		serverOverlays.Delete(proc)
	}()
}

// callWriting is a call of a server that writes the workspace. A server
// that has run since before the call starts afresh first: its overlay's
// view of the workspace is the one it mounted, and a file replaced since
// (a Write's rename, a checkout, an editor's save) would still read as it
// was. Then the host guard's snapshot, the call, and, when the server
// wrote or its session ended, the server stopped and its writes judged,
// recorded and applied (Writes in ctx says what happened).
func (p *Pool) callWriting(ctx context.Context, ws string, srv Server, lim Limits, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	wc, _ := ctx.Value(writesKey{}).(writesCtx)
	if wc.out == nil {
		wc.out = &Writes{}
	}
	if err := p.retire(ws, srv, wc); err != nil {
		return nil, err
	}
	s, err := p.session(ctx, ws, srv, lim)
	if err != nil {
		return nil, err
	}
	dir, ok := serverOverlays.Load(s.proc)
	if !ok {
		return nil, sandbox.ErrNoServiceOverlay
	}
	watch, err := watchOverlay(p.Sandbox, ws, dir.(string))
	if err != nil {
		return nil, err
	}
	res, cerr := p.callOn(ctx, ws, srv, s, tool, args)
	if !watch.Wrote() && !s.dropped.Load() && !isExited(s.proc) {
		watch.Release()
		return res, cerr
	}
	// The upper layer is judged only once nothing has it mounted.
	p.drop(ws, srv.poolName(), s)
	<-s.proc.Done()
	judge(watch, dir.(string), wc)
	return res, cerr
}

// retire stops the server's running session, if any, and judges what it
// wrote since its last call as this call's writes.
func (p *Pool) retire(ws string, srv Server, wc writesCtx) error {
	p.mu.Lock()
	s := p.sessions[ws+"\x00"+srv.poolName()]
	p.mu.Unlock()
	if s == nil || s.proc == nil {
		return nil
	}
	dir, ok := serverOverlays.Load(s.proc)
	p.drop(ws, srv.poolName(), s)
	<-s.proc.Done()
	if !ok {
		return nil
	}
	watch, err := watchOverlay(p.Sandbox, ws, dir.(string))
	if err != nil {
		return err
	}
	judge(watch, dir.(string), wc)
	return nil
}

// watchOverlay takes the host guard's snapshot before a call of the server
// whose overlay is dir.
func watchOverlay(sb sandbox.Sandbox, ws, dir string) (*hostguard.ServiceWatch, error) {
	svc, real, err := sandbox.ServiceOverlays(sb, ws)
	if err != nil {
		return nil, err
	}
	return svc.Watch(real, dir), nil
}

// judge finishes watch once its server is gone: what the overlay holds is
// judged, recorded and applied, and said in wc; an overlay holding
// nothing is removed.
func judge(watch *hostguard.ServiceWatch, dir string, wc writesCtx) {
	if !watch.Wrote() {
		watch.Release()
		hostguard.DropOverlay(dir)
		return
	}
	rep := watch.Finish(wc.hook)
	w := wc.out
	w.Wrote = true
	w.Report.HostConfig = append(w.Report.HostConfig, rep.HostConfig...)
	w.Report.Withheld = append(w.Report.Withheld, rep.Withheld...)
	w.Report.HostConfigKept = cmp.Or(rep.HostConfigKept, w.Report.HostConfigKept)
	w.Report.HostConfigUnchecked = cmp.Or(rep.HostConfigUnchecked, w.Report.HostConfigUnchecked)
	w.Report.Unmerged = strings.TrimPrefix(w.Report.Unmerged+"; "+rep.Unmerged, "; ")
	w.Report.Unmerged = strings.TrimSuffix(w.Report.Unmerged, "; ")
}
