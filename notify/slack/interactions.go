package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/slack-go/slack"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/internal/answerkey"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// NotApprover is the refusal recorded for a person not in SLACK_APPROVERS.
const NotApprover = "not in SLACK_APPROVERS"

// interaction handles a verified interaction payload: a button click.
func (b *Bot) interaction(ctx context.Context, cb slack.InteractionCallback) {
	if cb.Type != slack.InteractionTypeBlockActions {
		return
	}
	for _, a := range cb.ActionCallback.BlockActions {
		var v ButtonValue
		if err := json.Unmarshal([]byte(a.Value), &v); err != nil || v.Job == "" || v.Call == "" {
			b.reply(ctx, cb.ResponseURL, "not applied: this button does not name a custos job and call")
			continue
		}
		if a.ActionID == ActionView {
			b.viewInput(ctx, cb, v)
			continue
		}
		if a.ActionID == ActionGrant {
			b.reply(ctx, cb.ResponseURL, b.decide(ctx, cb.User, v, "allow", &jobapi.GrantSpec{For: GrantFor}))
			continue
		}
		decision, ok := decisionOf[a.ActionID]
		if !ok {
			continue // not one of ours
		}
		b.reply(ctx, cb.ResponseURL, b.decide(ctx, cb.User, v, decision, nil))
	}
}

// Answer sends a person's answer to the job and says, in the words the
// person reads, what became of it. Anyone may deny; only approvers may
// allow, always or never. A refused answer still goes to the job, marked
// Refused, so the job audits it; the call keeps waiting.
func (b *Bot) decide(ctx context.Context, user slack.User, v ButtonValue, decision string, grant *jobapi.GrantSpec) string {
	d := jobapi.ApprovalDecision{CallID: v.Call, Decision: decision, By: userName(user.ID, cmpOr(user.Name, user.Profile.DisplayName)), Channel: "slack",
		Grant: grant}
	d.Refused = b.answerRefusal(ctx, user.ID, decision)
	if decision == "allow" && d.Refused == "" {
		// The person's ID alone first: most calls need no approvals, and
		// those that do name the groups that count only in the job's
		// status, a query the common click should not wait for.
		d.Verified = b.vouch(v, user.ID, decision, nil)
	}
	res, err := b.send(ctx, v.Job, d)
	if d.Verified != nil && notAmongApprovers(err) {
		if groups := b.groupsOf(ctx, v, user.ID); len(groups) > 0 {
			d.Verified = b.vouch(v, user.ID, decision, groups)
			res, err = b.send(ctx, v.Job, d)
		}
	}
	if err != nil {
		b.logger.Info("slack answer not applied", "job", v.Job, "call", v.Call, "by", d.By, "decision", decision, "err", err)
		return answerError(err, v.Job, d.Refused)
	}
	return decidedText(res)
}

// answerRefusal says why user may not give this answer, or "": a denial
// is open to everyone in the channel (it can only stop a call), the other
// answers let a call run or change the policy and need an approver.
func (b *Bot) answerRefusal(ctx context.Context, user, decision string) string {
	if decision == "deny" {
		return ""
	}
	return b.refusal(ctx, user)
}

// refusal says why user may not approve, or "" when they may. A group
// lookup that fails refuses: nobody is let through on an unknown answer.
func (b *Bot) refusal(ctx context.Context, user string) string {
	ok, err := b.approvers.IsApprover(ctx, user)
	switch {
	case err != nil:
		b.logger.Warn("slack approver check failed", "user", user, "err", err)
		return "could not check " + EnvApprovers + ": " + err.Error()
	case !ok:
		return NotApprover
	}
	return ""
}

// send is the decide Update, waited for.
func (b *Bot) send(ctx context.Context, job string, d jobapi.ApprovalDecision) (jobapi.DecideResult, error) {
	var res jobapi.DecideResult
	h, err := b.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: job, UpdateName: jobapi.DecideUpdate,
		Args: []any{d}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	return res, err
}

// notAmongApprovers reports whether the job refused an approval because
// the person is not (as far as it was told) among those who may give it.
func notAmongApprovers(err error) bool {
	return err != nil && strings.Contains(err.Error(), "is not among those who may approve")
}

// vouch signs the identity of a person Slack verified (the request's
// signature) for a call that may need several approvals: their user ID
// and the groups given. Without the key it vouches for nobody.
func (b *Bot) vouch(v ButtonValue, user, decision string, groups []string) *jobapi.VerifiedIdentity {
	if len(b.cfg.AnswerKey) == 0 {
		return nil
	}
	sig, err := answerkey.Sign(b.cfg.AnswerKey, answerkey.Claim{Job: v.Job, Call: v.Call, Decision: decision, Channel: "slack", ID: user, Groups: groups})
	if err != nil {
		return nil
	}
	return &jobapi.VerifiedIdentity{ID: user, Groups: groups, Sig: sig}
}

// groupsOf are the user groups of the call's approvals the user is in,
// read through the job's status and the Web API. A group that cannot be
// read is left out: the bot claims less, never more.
func (b *Bot) groupsOf(ctx context.Context, v ButtonValue, user string) []string {
	p, err := b.pendingCall(ctx, v)
	if err != nil {
		return nil
	}
	var groups []string
	for _, q := range p.Quorum {
		for _, f := range q.From {
			if !validID(f, "S") || slices.Contains(groups, f) {
				continue
			}
			members, err := b.approvers.members(ctx, f)
			if err != nil {
				b.logger.Warn("slack group lookup failed; not vouching for it", "group", f, "user", user, "err", err)
				continue
			}
			if slices.Contains(members, user) {
				groups = append(groups, f)
			}
		}
	}
	return groups
}

// decidedText is the reply for an answer that counted, e.g. "allowed Write notes.md".
func decidedText(r jobapi.DecideResult) string {
	if r.Answer == "vote" {
		return "approval counted for " + escape(oneLine(cmpOr(display.SafeLine(r.Summary), r.Tool), maxSummary)) +
			"; still needed: " + escape(display.Line(r.Needed, 400)) + ". The call is still waiting."
	}
	verb := "allowed"
	if r.Decision != "allow" {
		verb = "denied"
	}
	if r.Answer == "always" || r.Answer == "never" {
		verb += " (" + r.Answer + ")"
	}
	s := verb + " " + escape(oneLine(cmpOr(display.SafeLine(r.Summary), r.Tool), maxSummary))
	if r.Rule != "" {
		s += "; rule learned: " + escape(display.Line(r.Rule, 400))
	}
	if g := r.Grant; g != nil {
		// Plain text: a reply is escaped whole (reply), so no Slack date
		// or mention would work in it.
		s += fmt.Sprintf("; granted %s: `%s` in this %s until %s (revoke: `/custos revoke JOB %s`)", display.Line(g.ID, 200),
			display.Line(g.Rule, 400), g.Scope, g.Until.UTC().Format("2006-01-02 15:04 UTC"), display.Line(g.ID, 200))
	}
	return s
}

// answerError is the reply for an answer that did not count.
func answerError(err error, job, refused string) string {
	msg := err.Error()
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		msg = ae.Message()
	}
	var nf *serviceerror.NotFound
	switch {
	case strings.HasPrefix(msg, "refused:") && refused == NotApprover:
		return "refused: you are not in " + EnvApprovers + ": only approvers may allow, always or never (anyone may deny). The call is still waiting."
	case strings.HasPrefix(msg, "refused:") && refused != "":
		return "refused: " + refused + ". The call is still waiting."
	case strings.HasPrefix(msg, "refused:"):
		return msg + ". The call is still waiting."
	case strings.HasPrefix(msg, "not applied:"):
		return msg
	case errors.As(err, &nf):
		return fmt.Sprintf("not applied: job %s is not running (it has ended, or never existed)", job)
	}
	return "not applied: could not reach the job: " + msg
}

// userName is how the audit names a Slack user: "U123 (alice)".
func userName(id, name string) string {
	if name == "" {
		return id
	}
	return id + " (" + name + ")"
}

// viewInput opens a modal with the call's full input, read from the job.
func (b *Bot) viewInput(ctx context.Context, cb slack.InteractionCallback, v ButtonValue) {
	p, err := b.pendingCall(ctx, v)
	if err != nil {
		b.reply(ctx, cb.ResponseURL, err.Error())
		return
	}
	if _, err := b.api.OpenViewContext(ctx, cb.TriggerID, inputModal(v.Job, p)); err != nil {
		b.logger.Warn("slack views.open failed", "job", v.Job, "call", v.Call, "err", err)
		b.reply(ctx, cb.ResponseURL, "could not open the input: "+err.Error())
	}
}

// pendingCall finds a waiting call through the job's status query.
func (b *Bot) pendingCall(ctx context.Context, v ButtonValue) (jobapi.PendingAsk, error) {
	st, err := b.status(ctx, v.Job)
	if err != nil {
		return jobapi.PendingAsk{}, err
	}
	for _, p := range st.Pending {
		if p.CallID == v.Call {
			return p, nil
		}
	}
	return jobapi.PendingAsk{}, fmt.Errorf("call %s of job %s is no longer waiting", v.Call, v.Job)
}

func (b *Bot) status(ctx context.Context, job string) (jobapi.Status, error) {
	var st jobapi.Status
	val, err := b.temporal.QueryWorkflow(ctx, job, "", jobapi.StatusQuery)
	if err == nil {
		err = val.Get(&st)
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return st, fmt.Errorf("job %s is not running", job)
	}
	if err != nil {
		return st, fmt.Errorf("could not read job %s: %w", job, err)
	}
	return st, nil
}
