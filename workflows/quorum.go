package workflows

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/jobapi"
	"github.com/custos-dev/custos/workflows/quorum"
)

// Calls that need N of M people (the settings' "approvals"): the call
// waits at layer 5 until every entry that covers it has its number of
// distinct approvers from its list, each verified by a channel (a signed
// VerifiedIdentity, checked in an activity); any one deny denies, the job's
// owner never counts, and the deadline still denies.

// quorumFor is the approvals entries that cover the call of rec, recorded
// in history as the policy's verdicts are (recordedEvaluate): a later
// release may match differently. A job whose settings name none records
// nothing, so histories from before replay unchanged.
func (j *job) quorumFor(ctx workflow.Context, rec approval.AuditRecord) []QuorumState {
	if len(j.st.Settings.Approvals) == 0 {
		return nil
	}
	call := approval.Call{Tool: rec.Tool, Input: rec.Input}
	var qs []approval.QuorumRule
	err := workflow.SideEffect(ctx, func(workflow.Context) any { return j.policy.Quorum(call) }).Get(&qs)
	if err != nil {
		// Only a broken payload converter gets here. Fail closed: a
		// quorum nobody can meet, so the deadline denies.
		return []QuorumState{{Rule: "(could not record the approvals: " + err.Error() + ")", Require: 1}}
	}
	out := make([]QuorumState, len(qs))
	for i, q := range qs {
		out[i] = QuorumState{Rule: q.Rule, Require: q.Require, From: q.From}
	}
	return out
}

// owners are the identities whose answers never count towards a quorum.
func (j *job) owners() []string {
	return append(slices.Clone(j.in.Owner), j.st.Settings.Identities...)
}

// checkVote says why an answer to a call that needs approvals would not
// count, or nil. Like checkAnswer it only reads state.
func (j *job) checkVote(p *pendingCall, d ApprovalDecision) error {
	if err := quorum.CheckVote(p.ask.Quorum, d, j.owners()); err != nil {
		return notApplied("%v", err)
	}
	return nil
}

// vote counts a verified approval of a call that needs several: the
// channel's signature is checked first (an activity: the workers hold the
// key); the last approval needed answers the call.
func (j *job) vote(ctx workflow.Context, p *pendingCall, d ApprovalDecision) (DecideResult, error) {
	v := d.Verified
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary:             "verify " + v.ID + "'s answer to " + d.CallID,
	})
	var ok bool
	err := workflow.ExecuteActivity(actx, api.VerifyAnswerActivity, api.VerifyAnswerRequest{
		Job: j.id, Call: d.CallID, Decision: d.Decision, Channel: d.Channel, ID: v.ID, Groups: v.Groups, Sig: v.Sig,
	}).Get(ctx, &ok)
	if err != nil || !ok {
		why := "the channel's signature of the identity does not verify"
		if err != nil {
			why = "could not verify the identity: " + applicationMessage(err)
		}
		d.Refused = why
		j.refuseAnswer(ctx, d)
		return DecideResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("refused: %s: %s", who(v.ID, d.Channel), why), "Refused", nil)
	}
	// Checked again: the call may have been answered, or the same person
	// counted, while the signature was checked.
	if err := j.checkAnswer(d); err != nil {
		return DecideResult{}, err
	}
	quorum.Count(p.ask.Quorum, v.ID, v.Groups)
	votes, missing := voters(p.ask.Quorum), needed(p.ask.Quorum)
	j.audit(ctx, approval.AuditRecord{JobID: j.id, Event: "approval-vote", CallID: d.CallID, Tool: p.ask.Tool, Decision: approval.Allow,
		Approver: v.ID, Channel: d.Channel, Layer: approval.LayerHuman, Reason: "approved; still needed: " + missing})
	j.emit(ctx, Event{Kind: "answer", CallID: d.CallID, Tool: p.ask.Tool, Text: fmt.Sprintf("approved by %s; still needed: %s", who(v.ID, d.Channel), missing)})
	j.updateDetails(ctx)
	if missing != "none" {
		return DecideResult{CallID: d.CallID, Tool: p.ask.Tool, Summary: p.ask.Summary, Answer: "vote", Layer: approval.LayerHuman,
			By: v.ID, Channel: d.Channel, At: workflow.Now(ctx), Votes: votes, Needed: missing}, nil
	}
	j.answer(ctx, p, ApprovalDecision{CallID: d.CallID, Decision: "allow", By: strings.Join(votes, " + "), Channel: d.Channel,
		Reason: "approved by " + strings.Join(votes, ", ")})
	if err := workflow.Await(ctx, func() bool { return p.result != nil }); err != nil {
		return DecideResult{}, err
	}
	res := *p.result
	res.Votes, res.Needed = votes, missing
	return res, nil
}

// needed and voters: jobapi's QuorumNeeded and QuorumVoters.
func needed(qs []QuorumState) string   { return jobapi.QuorumNeeded(qs) }
func voters(qs []QuorumState) []string { return jobapi.QuorumVoters(qs) }

func quorumReason(qs []QuorumState, before string) string { return quorum.Reason(qs, before) }
