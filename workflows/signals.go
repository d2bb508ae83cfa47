package workflows

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/calltext"
	"github.com/custos-dev/custos/workflows/details"
	"github.com/custos-dev/custos/workflows/grants"
	"github.com/custos-dev/custos/workflows/parking"
	"github.com/custos-dev/custos/workflows/subagent"
)

// startSignalRouter reads the approval and mode signals for the whole run.
// Signals and Updates share one code path (answer, changeMode); a signal
// that would not count (unknown, decided or expired call, malformed
// payload) is recorded and otherwise ignored.
func (j *job) startSignalRouter(ctx workflow.Context) {
	approvals := workflow.GetSignalChannel(ctx, ApprovalSignal)
	modes := workflow.GetSignalChannel(ctx, ModeSignal)
	messages := workflow.GetSignalChannel(ctx, MessageSignal)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(messages, func(c workflow.ReceiveChannel, _ bool) {
				var raw json.RawMessage
				c.Receive(ctx, &raw)
				j.routeMessage(ctx, raw)
			})
			sel.AddReceive(approvals, func(c workflow.ReceiveChannel, _ bool) {
				var raw json.RawMessage
				c.Receive(ctx, &raw)
				j.routeApproval(ctx, raw)
			})
			sel.AddReceive(modes, func(c workflow.ReceiveChannel, _ bool) {
				var raw json.RawMessage
				c.Receive(ctx, &raw)
				j.routeMode(ctx, raw)
			})
			sel.Select(ctx)
			if ctx.Err() != nil {
				return
			}
		}
	})
	subagent.OnParentMode(ctx, j.narrowByParent)
	subagent.OnChildAsk(ctx, j.childAsked)
}

// drainSignals handles every signal already delivered, before the run ends.
func (j *job) drainSignals(ctx workflow.Context) {
	approvals := workflow.GetSignalChannel(ctx, ApprovalSignal)
	modes := workflow.GetSignalChannel(ctx, ModeSignal)
	messages := workflow.GetSignalChannel(ctx, MessageSignal)
	for {
		var raw json.RawMessage
		if messages.ReceiveAsync(&raw) {
			j.routeMessage(ctx, raw)
			continue
		}
		if approvals.ReceiveAsync(&raw) {
			j.routeApproval(ctx, raw)
			continue
		}
		if modes.ReceiveAsync(&raw) {
			j.routeMode(ctx, raw)
			continue
		}
		return
	}
}

// registerUpdates sets the decide and mode Updates. Their validators run
// before anything enters history: an answer that would not count is
// refused to its sender and leaves no trace.
func (j *job) registerUpdates(ctx workflow.Context) error {
	err := workflow.SetUpdateHandlerWithOptions(ctx, DecideUpdate,
		func(ctx workflow.Context, d ApprovalDecision) (DecideResult, error) {
			d = normalizeAnswer(d)
			// Checked again: another answer may have been applied between
			// this Update's validation and its handler, and time moved.
			if err := j.checkAnswerAt(d, workflow.Now(ctx)); err != nil {
				return DecideResult{}, err
			}
			if d.Refused != "" {
				j.refuseAnswer(ctx, d)
				return DecideResult{}, temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("refused: %s may not answer %s: %s", who(d.By, d.Channel), d.CallID, d.Refused), "Refused", nil)
			}
			p := j.pending[d.CallID]
			if len(p.ask.Quorum) > 0 && d.Decision == "allow" {
				return j.vote(ctx, p, d)
			}
			j.answer(ctx, p, d)
			if err := workflow.Await(ctx, func() bool { return p.result != nil }); err != nil {
				return DecideResult{}, err
			}
			return *p.result, nil
		},
		workflow.UpdateHandlerOptions{
			Validator: func(ctx workflow.Context, d ApprovalDecision) error {
				return j.checkAnswerAt(normalizeAnswer(d), workflow.Now(ctx))
			},
			Description: `Answer a tool call waiting for approval and get its final decision. ` +
				`Input: {"callId": "…", "decision": "allow|deny|always|never", "reason": "", "by": "you", ` +
				`"grant": {"rule": "Bash(npm test:*)", "scope": "job|workspace", "for": "30m"}} (grant: optional, with allow; or "until": a time). ` +
				`Refused (nothing recorded) for an unknown, decided or expired call, or a grant that would not hold.`,
		})
	if err != nil {
		return fmt.Errorf("register %s update: %w", DecideUpdate, err)
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, ModeUpdate,
		func(ctx workflow.Context, m ModeChange) (ModeResult, error) {
			mode, err := j.parseModeChange(m)
			if err != nil {
				return ModeResult{}, err
			}
			if m.Refused != "" {
				j.refuseMode(ctx, m, mode)
				return ModeResult{}, temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("refused: %s may not switch the job to %s: %s", who(m.By, m.Channel), mode, m.Refused), "Refused", nil)
			}
			old := j.setMode(ctx, mode, m)
			return ModeResult{Old: old, New: mode, By: m.By}, nil
		},
		workflow.UpdateHandlerOptions{
			Validator: func(m ModeChange) error {
				_, err := j.parseModeChange(m)
				return err
			},
			Description: `Change the job's permission mode: {"mode": "default|acceptEdits|dontAsk|plan|bypass", "by": "you"}.`,
		})
	if err != nil {
		return fmt.Errorf("register %s update: %w", ModeUpdate, err)
	}
	return nil
}

// normalizeAnswer trims and lowercases the decision and names the channel.
func normalizeAnswer(d ApprovalDecision) ApprovalDecision {
	d.Decision = strings.ToLower(strings.TrimSpace(d.Decision))
	d.CallID = strings.TrimSpace(d.CallID)
	d.Channel = cmp.Or(strings.TrimSpace(d.Channel), "temporal")
	return d
}

// checkAnswer says why an answer would not count, or nil. It only reads
// state: it is also the decide Update's validator.
func (j *job) checkAnswer(d ApprovalDecision) error {
	switch d.Decision {
	case "allow", "deny", "always", "never":
	default:
		return notApplied("decision %q is not allow, deny, always or never", d.Decision)
	}
	if d.CallID == "" {
		return notApplied("callId is missing")
	}
	if p, ok := j.pending[d.CallID]; ok {
		if p.answer != nil {
			return notApplied("already answered %s by %s; the decision is being applied", p.answer.Decision, who(p.answer.By, p.answer.Channel))
		}
		if len(p.ask.Quorum) > 0 {
			return j.checkVote(p, d)
		}
		return nil
	}
	if r, ok := j.closed[d.CallID]; ok {
		return notApplied("already %s", details.Closed(r, j.in.ApprovalTimeout))
	}
	return notApplied("no call %q is waiting for approval in this job", d.CallID)
}

// checkAnswerAt is checkAnswer and, for an answer with a grant, the
// grant's checks at workflow time now.
func (j *job) checkAnswerAt(d ApprovalDecision, now time.Time) error {
	if err := j.checkAnswer(d); err != nil {
		return err
	}
	return j.checkGrant(j.pending[d.CallID], d, now)
}

// notApplied is the error an answer that did not count gets.
func notApplied(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError("not applied: "+fmt.Sprintf(format, args...), "NotApplied", nil)
}

func who(by, channel string) string { return calltext.Who(by, channel) }

// routeApproval is the signal's way in: decode strictly, then the same
// checks and the same answer as the Update.
func (j *job) routeApproval(ctx workflow.Context, raw json.RawMessage) {
	var d ApprovalDecision
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		j.ignoreSignal(ctx, d, fmt.Sprintf("malformed approval signal: %v", err))
		return
	}
	d = normalizeAnswer(d)
	if err := j.checkAnswerAt(d, workflow.Now(ctx)); err != nil {
		j.ignoreSignal(ctx, d, strings.TrimPrefix(applicationMessage(err), "not applied: "))
		return
	}
	if d.Refused != "" {
		j.refuseAnswer(ctx, d)
		return
	}
	p := j.pending[d.CallID]
	if len(p.ask.Quorum) > 0 && d.Decision == "allow" {
		// Checking the channel's signature takes an activity, which the
		// signal router must not wait for; the decide Update counts it.
		j.ignoreSignal(ctx, d, "this call needs approvals from verified people: send them with the decide Update (Slack does)")
		return
	}
	j.answer(ctx, p, d)
}

// answer hands the first valid answer to the waiting call.
func (j *job) answer(ctx workflow.Context, p *pendingCall, d ApprovalDecision) {
	p.answer = &d
	p.ch.Send(ctx, d)
}

func (j *job) ignoreSignal(ctx workflow.Context, d ApprovalDecision, why string) {
	j.audit(ctx, approval.AuditRecord{Event: "signal-ignored", CallID: d.CallID, Decision: approval.Decision(d.Decision),
		Approver: d.By, Channel: d.Channel, Reason: why})
	j.emit(ctx, Event{Kind: "signal", CallID: d.CallID, Text: "approval signal ignored: " + why})
}

// refuseAnswer records an answer its channel refused (the person may not
// give it); the call keeps waiting.
func (j *job) refuseAnswer(ctx workflow.Context, d ApprovalDecision) {
	j.audit(ctx, approval.AuditRecord{Event: "answer-refused", CallID: d.CallID, Decision: approval.Decision(d.Decision),
		Approver: d.By, Channel: d.Channel, Layer: approval.LayerHuman, Reason: d.Refused})
	j.emit(ctx, Event{Kind: "signal", CallID: d.CallID, Text: fmt.Sprintf("%s answer by %s refused: %s", d.Decision, who(d.By, d.Channel), d.Refused)})
}

// parseModeChange reads the mode asked for; one the job's settings rule
// out (bypass under disableBypassPermissionsMode) is not applied.
func (j *job) parseModeChange(m ModeChange) (approval.Mode, error) {
	if j.st == nil {
		return "", notApplied("the job is still starting; try again in a moment")
	}
	mode, err := approval.ParseMode(strings.TrimSpace(m.Mode))
	if err == nil {
		err = approval.CheckMode(j.st.Settings, mode)
	}
	if err != nil {
		return "", temporal.NewNonRetryableApplicationError("not applied: "+err.Error(), "NotApplied", nil)
	}
	return mode, nil
}

// routeMode is the mode signal's way in.
func (j *job) routeMode(ctx workflow.Context, raw json.RawMessage) {
	var m ModeChange
	if err := json.Unmarshal(raw, &m); err != nil {
		// Also accept a bare JSON string: "acceptEdits".
		if err2 := json.Unmarshal(raw, &m.Mode); err2 != nil {
			j.emit(ctx, Event{Kind: "signal", Text: fmt.Sprintf("mode signal ignored: %v", err)})
			return
		}
	}
	mode, err := j.parseModeChange(m)
	if err != nil {
		j.emit(ctx, Event{Kind: "signal", Text: "mode signal ignored: " + strings.TrimPrefix(applicationMessage(err), "not applied: ")})
		return
	}
	if m.Refused != "" {
		j.refuseMode(ctx, m, mode)
		return
	}
	j.setMode(ctx, mode, m)
}

func (j *job) setMode(ctx workflow.Context, mode approval.Mode, m ModeChange) approval.Mode {
	old := j.st.Mode
	j.st.Mode = mode
	j.audit(ctx, approval.AuditRecord{Event: "mode-changed", Reason: fmt.Sprintf("%s -> %s", old, mode), Approver: m.By,
		Channel: cmp.Or(m.Channel, "temporal"), Layer: approval.LayerMode})
	j.emit(ctx, Event{Kind: "mode", Text: fmt.Sprintf("mode %s -> %s by %s", old, mode, who(m.By, cmp.Or(m.Channel, "temporal")))})
	j.updateDetails(ctx)
	j.tasks.TellMode(ctx, subagent.ParentMode{Mode: mode, Parent: j.id, By: m.By, Channel: m.Channel})
	return old
}

func (j *job) refuseMode(ctx workflow.Context, m ModeChange, mode approval.Mode) {
	j.audit(ctx, approval.AuditRecord{Event: "mode-refused", Reason: fmt.Sprintf("%s -> %s: %s", j.st.Mode, mode, m.Refused),
		Approver: m.By, Channel: m.Channel, Layer: approval.LayerMode})
	j.emit(ctx, Event{Kind: "mode", Text: fmt.Sprintf("mode %s requested by %s refused: %s", mode, who(m.By, m.Channel), m.Refused)})
}

// applicationMessage is an error's message without the SDK's decorations.
func applicationMessage(err error) string { return parking.Message(err) }

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
	s := Status{JobID: j.id, Task: j.in.Task, Workspace: j.in.Workspace, Host: j.in.Host, State: j.phase, Pending: []PendingAsk{}}
	if j.st == nil {
		return s
	}
	s.Turn, s.Mode, s.LastAnswer, s.Usage, s.Learned, s.Sources = j.st.Turn, j.st.Mode, j.st.LastAnswer, j.st.Usage, j.st.Learned, j.st.Sources
	s.Runs, s.Turns = j.st.Runs, j.st.TurnSeqs
	s.Files, s.Instructions = j.st.JobFiles(j.in.Workspace, j.id), j.st.Instructions
	s.Grants = j.granted.Live(j.st.Grants)
	s.Queued, s.Messages = len(j.st.Queue), max(j.st.MessageSeq, 1)
	s.Budget = j.budgetStatus()
	s.Parent, s.Children = j.in.Parent.Ref(), j.tasks.List()
	if j.st.Waiting && j.phase == PhaseWaitingMessage {
		s.WaitingSince, s.IdleUntil = j.st.WaitSince, j.st.WaitSince.Add(j.idleLimit())
	}
	if w := j.st.ModelWait; w != nil {
		c := *w
		s.ModelWait = &c
	}
	for _, id := range j.order {
		s.Pending = append(s.Pending, j.pending[id].ask)
	}
	return s
}

// updateDetails shows the job in the Web UI (workflows/details): what it
// is doing and, for each pending approval, the exact signal to send.
func (j *job) updateDetails(ctx workflow.Context) {
	var b strings.Builder
	details.Head(&b, j.st, j.phase, j.in.Host, j.in.Workspace)
	parking.ModelWaitDetails(&b, j.st, j.id)
	parking.DiskWaitDetails(&b, j.disk)
	if j.st != nil && j.conv {
		waiting := j.st.Waiting && j.phase == PhaseWaitingMessage
		details.Conversation(&b, waiting, j.st.WaitSince, j.st.WaitSince.Add(j.idleLimit()), j.st.LastAnswer, len(j.st.Queue))
	}
	if j.st != nil {
		details.Budget(&b, j.st.Budget.Reached, j.budgetStatus())
	}
	b.WriteString(j.tasks.Details(DecideUpdate))
	asks := make([]PendingAsk, 0, len(j.order))
	for _, id := range j.order {
		asks = append(asks, j.pending[id].ask)
	}
	details.Pending(&b, asks, j.granted.On)
	if j.st != nil {
		grants.Details(&b, j.granted.Live(j.st.Grants))
	}
	details.Recent(&b, j.recent, j.in.ApprovalTimeout)
	workflow.SetCurrentDetails(ctx, b.String())
	j.upsertListing(ctx)
}
