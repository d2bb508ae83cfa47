package acpagent

import (
	"context"
	"encoding/json"
	"errors"

	acp "github.com/coder/acp-go-sdk"

	"github.com/custos-dev/custos/jobevents"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// The options of a permission request and the answers they are.
var permissionOptions = []struct {
	opt      acp.PermissionOption
	decision string
}{
	{acp.PermissionOption{OptionId: "allow_once", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce}, "allow"},
	{acp.PermissionOption{OptionId: "allow_always", Name: "Always allow (a rule)", Kind: acp.PermissionOptionKindAllowAlways}, "always"},
	{acp.PermissionOption{OptionId: "reject_once", Name: "Deny", Kind: acp.PermissionOptionKindRejectOnce}, "deny"},
	{acp.PermissionOption{OptionId: "reject_always", Name: "Never allow (a rule)", Kind: acp.PermissionOptionKindRejectAlways}, "never"},
}

// optionsFor are what the editor may answer: a call that needs several
// approvers' answers (N of M) can only be denied from here, as from the
// terminal.
func optionsFor(p jobapi.PendingAsk) []acp.PermissionOption {
	var out []acp.PermissionOption
	for _, o := range permissionOptions {
		if len(p.Quorum) > 0 && o.decision != "deny" {
			continue
		}
		out = append(out, o.opt)
	}
	return out
}

func decisionOf(id acp.PermissionOptionId) string {
	for _, o := range permissionOptions {
		if o.opt.OptionId == id {
			return o.decision
		}
	}
	return ""
}

// ask asks the editor about a call that waits for a person, as one more
// channel: its answer is the decide Update (first answer wins). A
// decision made elsewhere first cancels the request (stopAsking).
func (s *session) ask(call string) {
	ctx, cancel := context.WithCancel(s.a.ctx)
	s.mu.Lock()
	if _, dup := s.asked[call]; dup {
		s.mu.Unlock()
		cancel()
		return
	}
	s.asked[call] = cancel
	s.mu.Unlock()
	defer s.stopAsking(call)
	p, ok := s.pending(ctx, call)
	if !ok {
		return
	}
	res, err := s.a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionId: acp.SessionId(s.id), ToolCall: s.askedCall(p), Options: optionsFor(p)})
	if err != nil || res.Outcome.Selected == nil || ctx.Err() != nil {
		return // cancelled, decided elsewhere, or the editor is gone: the other channels and the timer remain
	}
	d := decisionOf(res.Outcome.Selected.OptionId)
	if d == "" {
		s.a.o.Logger.Warn("acp: unknown permission option", "job", s.id, "call", call, "option", res.Outcome.Selected.OptionId)
		return
	}
	_, err = update[jobapi.DecideResult](ctx, s.a.c, s.id, jobapi.DecideUpdate, "",
		jobapi.ApprovalDecision{CallID: call, Decision: d, By: s.a.o.By, Channel: Channel})
	if err != nil && !errors.Is(err, errNotApplied) {
		s.a.o.Logger.Warn("acp: answer not sent", "job", s.id, "call", call, "err", err)
	}
}

// pending is the waiting call's ask, if it still waits.
func (s *session) pending(ctx context.Context, call string) (jobapi.PendingAsk, bool) {
	st, err := jobevents.QueryStatus(ctx, s.a.c, s.id)
	if err != nil {
		return jobapi.PendingAsk{}, false
	}
	for _, p := range st.Pending {
		if p.CallID == call {
			return p, true
		}
	}
	return jobapi.PendingAsk{}, false
}

// askedCall is the call as the permission request shows it: its whole
// input (a Write's content, an Edit's strings) as the diff, and why it
// asks.
func (s *session) askedCall(p jobapi.PendingAsk) acp.ToolCallUpdate {
	var in callInput
	var raw any
	_ = json.Unmarshal(p.Input, &in)
	_ = json.Unmarshal(p.Input, &raw)
	loc := s.locations(in)
	tc := acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(p.CallID), Title: acp.Ptr(titleOf(p.Tool, p.Summary)),
		Kind: acp.Ptr(kindOf(p.Tool)), Status: acp.Ptr(acp.ToolCallStatusPending), Locations: loc, RawInput: raw}
	tc.Content = diffOf(p.Tool, in, loc)
	if p.Reason != "" {
		tc.Content = append(tc.Content, acp.ToolContent(acp.TextBlock("asks because: "+p.Reason)))
	}
	if p.Preview != "" && tc.Content == nil {
		tc.Content = append(tc.Content, acp.ToolContent(acp.TextBlock(p.Preview)))
	}
	return tc
}

// stopAsking withdraws the editor's request about call, if one is open
// (the SDK sends $/cancel_request).
func (s *session) stopAsking(call string) {
	s.mu.Lock()
	cancel := s.asked[call]
	delete(s.asked, call)
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
