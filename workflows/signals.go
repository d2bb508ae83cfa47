package workflows

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/approval"
)

// startSignalRouter reads the approval and mode signals for the whole run.
// Approvals go to the waiting call; anything else (unknown, decided or
// expired calls, malformed payloads) is recorded and otherwise ignored.
func (j *job) startSignalRouter(ctx workflow.Context) {
	approvals := workflow.GetSignalChannel(ctx, ApprovalSignal)
	modes := workflow.GetSignalChannel(ctx, ModeSignal)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(approvals, func(c workflow.ReceiveChannel, _ bool) {
				var raw json.RawMessage
				c.Receive(ctx, &raw)
				j.routeApproval(ctx, raw)
			})
			sel.AddReceive(modes, func(c workflow.ReceiveChannel, _ bool) {
				var raw json.RawMessage
				c.Receive(ctx, &raw)
				j.changeMode(ctx, raw)
			})
			sel.Select(ctx)
			if ctx.Err() != nil {
				return
			}
		}
	})
}

// drainSignals handles every signal already delivered, before the run ends.
func (j *job) drainSignals(ctx workflow.Context) {
	approvals := workflow.GetSignalChannel(ctx, ApprovalSignal)
	modes := workflow.GetSignalChannel(ctx, ModeSignal)
	for {
		var raw json.RawMessage
		if approvals.ReceiveAsync(&raw) {
			j.routeApproval(ctx, raw)
			continue
		}
		if modes.ReceiveAsync(&raw) {
			j.changeMode(ctx, raw)
			continue
		}
		return
	}
}

func (j *job) routeApproval(ctx workflow.Context, raw json.RawMessage) {
	var d ApprovalDecision
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		j.ignoreSignal(ctx, d, fmt.Sprintf("malformed approval signal: %v", err))
		return
	}
	d.Decision = strings.ToLower(strings.TrimSpace(d.Decision))
	switch d.Decision {
	case "allow", "deny", "always", "never":
	default:
		j.ignoreSignal(ctx, d, fmt.Sprintf("decision %q is not allow, deny, always or never", d.Decision))
		return
	}
	p, ok := j.pending[d.CallID]
	switch {
	case ok && !p.answered:
		// The first decision for a call wins.
		p.answered = true
		p.ch.Send(ctx, d)
	case ok:
		j.ignoreSignal(ctx, d, "call already decided")
	case j.closed[d.CallID] == "expired":
		j.ignoreSignal(ctx, d, "call already denied by timeout")
	case j.closed[d.CallID] == "decided":
		j.ignoreSignal(ctx, d, "call already decided")
	default:
		j.ignoreSignal(ctx, d, "no pending call with this id")
	}
}

func (j *job) ignoreSignal(ctx workflow.Context, d ApprovalDecision, why string) {
	j.audit(ctx, approval.AuditRecord{Event: "signal-ignored", CallID: d.CallID, Decision: approval.Decision(d.Decision),
		Approver: d.By, Reason: why})
	j.emit(ctx, Event{Kind: "signal", CallID: d.CallID, Text: "approval signal ignored: " + why})
}

func (j *job) changeMode(ctx workflow.Context, raw json.RawMessage) {
	var m ModeChange
	if err := json.Unmarshal(raw, &m); err != nil {
		// Also accept a bare JSON string: "acceptEdits".
		if err2 := json.Unmarshal(raw, &m.Mode); err2 != nil {
			j.emit(ctx, Event{Kind: "signal", Text: fmt.Sprintf("mode signal ignored: %v", err)})
			return
		}
	}
	mode, err := approval.ParseMode(m.Mode)
	if err != nil {
		j.emit(ctx, Event{Kind: "signal", Text: fmt.Sprintf("mode signal ignored: %v", err)})
		return
	}
	old := j.st.Mode
	j.st.Mode = mode
	j.audit(ctx, approval.AuditRecord{Event: "mode-changed", Reason: fmt.Sprintf("%s -> %s", old, mode), Approver: m.By,
		Layer: approval.LayerMode})
	j.emit(ctx, Event{Kind: "mode", Text: fmt.Sprintf("mode %s -> %s", old, mode)})
	j.updateDetails(ctx)
}

func (j *job) registerQueries(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, StatusQuery, func() (Status, error) {
		return j.status(), nil
	}); err != nil {
		return fmt.Errorf("register status query: %w", err)
	}
	if err := workflow.SetQueryHandler(ctx, AuditQuery, func() ([]approval.AuditRecord, error) {
		if j.st == nil {
			return nil, nil
		}
		return j.st.Audit, nil
	}); err != nil {
		return fmt.Errorf("register audit query: %w", err)
	}
	if err := workflow.SetQueryHandler(ctx, EventsQuery, func(since int) ([]Event, error) {
		var out []Event
		for _, e := range j.events {
			if e.Seq > since {
				out = append(out, e)
			}
		}
		return out, nil
	}); err != nil {
		return fmt.Errorf("register events query: %w", err)
	}
	return nil
}

func (j *job) status() Status {
	s := Status{JobID: j.id, Task: j.in.Task, Workspace: j.in.Workspace, State: j.phase, Pending: []PendingAsk{}}
	if j.st == nil {
		return s
	}
	s.Turn, s.Mode, s.LastAnswer, s.Usage, s.Learned, s.Sources = j.st.Turn, j.st.Mode, j.st.LastAnswer, j.st.Usage, j.st.Learned, j.st.Sources
	s.Runs = j.st.Runs
	for _, id := range j.order {
		s.Pending = append(s.Pending, j.pending[id].ask)
	}
	return s
}

// updateDetails shows the job in the Web UI: what it is doing and, for each
// pending approval, the exact signal to send.
func (j *job) updateDetails(ctx workflow.Context) {
	var b strings.Builder
	turn, mode := 0, approval.Mode("")
	if j.st != nil {
		turn, mode = j.st.Turn, j.st.Mode
	}
	fmt.Fprintf(&b, "**custos** — turn %d, mode `%s`, %s\n\n", turn, mode, j.phase)
	if len(j.order) == 0 {
		b.WriteString("No approval pending.\n")
	} else {
		fmt.Fprintf(&b, "### Waiting for approval (%d)\n\n", len(j.order))
	}
	for _, id := range j.order {
		a := j.pending[id].ask
		sig, _ := json.Marshal(ApprovalDecision{CallID: id, Decision: "allow", By: "web-ui"})
		fmt.Fprintf(&b, "**%s** — call `%s`, denied at %s unless answered.\n\n", uiSummary(a.Tool, a.Input), id,
			a.Deadline.UTC().Format("2006-01-02 15:04:05Z"))
		if a.Reason != "" {
			fmt.Fprintf(&b, "Why it asks: %s\n\n", a.Reason)
		}
		fmt.Fprintf(&b, "Send signal `%s` with input `%s` — decision `allow`, `deny`, `always` or `never`.\n\n", ApprovalSignal, sig)
	}
	workflow.SetCurrentDetails(ctx, b.String())
}
