package workflows

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/workflows/granting"
	"github.com/custos-dev/custos/workflows/grants"
)

// Grants: an allow answer may carry a GrantSpec, a rule that also allows
// later calls, in the job or in the workspace, until a time. A grant stands
// in for a person's answer and nothing else: it is consulted only where a
// call would otherwise wait for a person (layer 5), and only for calls that
// an allow rule could have allowed — so a system rule, a deny rule, an ask
// rule, an unreadable command, an unconfined sandbox, a hook's deny or ask,
// plan and dontAsk all still decide as before.
//
// Workspace scope: the grant is written to the workspace's directory in
// custos' state directory on the workspace's host (an activity there), and
// every job of the workspace on that host reads that file (an activity,
// so recorded in its history) before it asks a person. Jobs started later
// see it too, no job needs to know of the others, and revoking it from any
// job removes it from the file, which ends it for all of them at their
// next call. Signalling running jobs instead would miss jobs started later
// and need a list of jobs the workflow cannot keep deterministically.

// grantEnd is grants.End, refused as not applied.
func grantEnd(g GrantSpec, now time.Time) (time.Time, error) {
	t, err := grants.End(g, now)
	if err != nil {
		return time.Time{}, notApplied("%v", err)
	}
	return t, nil
}

// checkGrant says why d's GrantSpec would not count for call p, or nil.
// It only reads state: the decide Update's validator runs it.
func (j *job) checkGrant(p *pendingCall, d ApprovalDecision, now time.Time) error {
	if d.Grant == nil {
		return nil
	}
	if !j.granted.On {
		return notApplied("this job began before grants; answer allow or always instead")
	}
	if d.Decision != "allow" {
		return notApplied("a grant goes with the decision allow, not %s", d.Decision)
	}
	if len(p.ask.Quorum) > 0 {
		return notApplied("this call needs approvals from %s; a grant stands in for one person and cannot", needed(p.ask.Quorum))
	}
	if _, err := grantEnd(*d.Grant, now); err != nil {
		return err
	}
	if err := approval.Grantable(p.rules, p.hookAsked); err != nil {
		return notApplied("%v", err)
	}
	rule := grants.Rule(*d.Grant, p.ask.Rule)
	if err := j.policy.GrantCovers(rule, p.call(), j.st.Mode); err != nil {
		return notApplied("%v", err)
	}
	return nil
}

// byGrant is layer 5 answered by a grant: the live grant that covers the
// call (granting.Keeper.Covering), or ok false (then a person is asked).
func (j *job) byGrant(ctx workflow.Context, found approval.Findings, rec approval.AuditRecord) (approval.AuditRecord, bool) {
	if !j.granted.On || approval.Grantable(found.Rules, hookAsked(found)) != nil {
		return rec, false
	}
	g, ok := j.granted.Covering(ctx, j.grantHost(), approval.Call{Tool: rec.Tool, Input: rec.Input})
	if !ok {
		return rec, false
	}
	info := g.Info()
	rec.Grant = &info
	rec.Approver, rec.Channel = g.By, "grant"
	rec = verdictRecord(rec, approval.Verdict{Decision: approval.Allow, Layer: approval.LayerHuman, Rule: g.Rule,
		Reason: fmt.Sprintf("allowed by grant %s", grants.Text(g))})
	return rec, true
}

// grantHost is what of the job its grants (workflows/granting) read and
// change.
func (j *job) grantHost() granting.Host {
	return granting.Host{Job: j.id, Workspace: j.in.Workspace, State: func() *State { return j.st }, Root: j.root,
		OnHost: j.onHost, Audit: j.audit, Emit: j.emit, UpdateDetails: j.updateDetails,
		Covers: func(rule string, c approval.Call, m approval.Mode) error { return j.policy.GrantCovers(rule, c, m) }}
}

// grantWaiting lets a grant just given answer the job's other calls that
// wait for a person and that it covers, as it will answer the next ones:
// "allow npm test for 30 minutes" also means the npm test beside it.
// Which calls it covers is recorded, as byGrant's choice is. Runs from
// before this replay without it.
func (j *job) grantWaiting(ctx workflow.Context, given *pendingCall, g Grant) {
	if workflow.GetVersion(ctx, "grant-answers-waiting", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	var open []string
	for _, id := range j.order {
		q := j.pending[id]
		if q == nil || q == given || q.answer != nil || len(q.ask.Quorum) > 0 || approval.Grantable(q.rules, q.hookAsked) != nil {
			continue
		}
		open = append(open, id)
	}
	if len(open) == 0 {
		return
	}
	mode := j.st.Mode
	var covered []string
	err := workflow.SideEffect(ctx, func(workflow.Context) any {
		var out []string
		for _, id := range open {
			if j.policy.GrantCovers(g.Rule, j.pending[id].call(), mode) == nil {
				out = append(out, id)
			}
		}
		return out
	}).Get(&covered)
	if err != nil {
		return // a person answers them, as without the grant
	}
	for _, id := range covered {
		q := j.pending[id]
		if q == nil || q.answer != nil {
			continue
		}
		if i := slices.IndexFunc(j.st.Grants, func(x Grant) bool { return x.ID == g.ID }); i >= 0 {
			j.st.Grants[i].Uses++
		}
		gc := g
		q.viaGrant = &gc
		j.answer(ctx, q, ApprovalDecision{CallID: id, Decision: "allow", By: g.By, Channel: "grant",
			Reason: "allowed by grant " + grants.Text(g)})
	}
}

func hookAsked(f approval.Findings) bool { return f.Hook != nil && f.Hook.Decision == hooks.Ask }
