package workflows

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/hooks"
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

// grantsVersion gates everything about grants: a job that was running
// before them replays without a grant's activities and timers, and
// refuses GrantSpecs (its history has no place for them).
const grantsChange = "grants"

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
	if !j.grantsOn {
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

// giveGrant keeps the grant an accepted allow answer carries: in the job's
// state with a timer that ends it, and for the workspace scope on the
// workspace's host too.
func (j *job) giveGrant(ctx workflow.Context, p *pendingCall, d ApprovalDecision) *Grant {
	now := workflow.Now(ctx)
	until, err := grantEnd(*d.Grant, now)
	if err != nil {
		// Validated already; time moved past an Until while the answer
		// waited. The call is still allowed once.
		j.emit(ctx, Event{Kind: "grant", CallID: p.ask.CallID, Text: "grant not given: " + applicationMessage(err)})
		return nil
	}
	j.st.GrantSeq++
	g := Grant{ID: fmt.Sprintf("g%d", j.st.GrantSeq), Rule: grants.Rule(*d.Grant, p.ask.Rule), Scope: grants.Scope(*d.Grant),
		By: d.By, Channel: d.Channel, CallID: p.ask.CallID, At: now.UTC(), Until: until}
	if g.Scope == ScopeWorkspace {
		// Named by the job too, so grants of two jobs never share an ID.
		g.ID = j.id + "." + g.ID
		err := workflow.ExecuteActivity(j.grantsCtx(ctx, "keep workspace grant "+g.Rule), api.AddWorkspaceGrantActivity,
			api.WorkspaceGrantsRequest{Workspace: j.in.Workspace, Grant: g.Info()}).Get(ctx, nil)
		if err != nil {
			j.emit(ctx, Event{Kind: "error", CallID: p.ask.CallID, Text: fmt.Sprintf("could not keep the workspace grant %s on the host: %v; it holds in this job only", g.Rule, err)})
			g.Scope = ScopeJob
		}
	}
	j.st.Grants = append(j.st.Grants, g)
	info := g.Info()
	j.audit(ctx, approval.AuditRecord{Event: "grant-given", CallID: g.CallID, Tool: p.ask.Tool, Rule: g.Rule, Decision: approval.Allow,
		Layer: approval.LayerHuman, Approver: g.By, Channel: g.Channel, Grant: &info})
	j.emit(ctx, Event{Kind: "grant", CallID: g.CallID, Text: "granted " + grants.Text(g)})
	j.watchGrant(ctx, g)
	return &g
}

// watchGrant ends g when its time comes: a durable timer, restarted from
// the carried state after continue-as-new.
func (j *job) watchGrant(ctx workflow.Context, g Grant) {
	// On the run's context, not the call's: an interrupt stops the work
	// of one answer, never a grant.
	if j.root != nil {
		ctx = j.root
	}
	tctx, cancel := workflow.WithCancel(ctx)
	j.grantStop[g.ID] = cancel
	workflow.Go(tctx, func(ctx workflow.Context) {
		if d := g.Until.Sub(workflow.Now(ctx)); d > 0 {
			t := workflow.NewTimerWithOptions(ctx, d, workflow.TimerOptions{Summary: "grant ends " + g.ID})
			if err := t.Get(ctx, nil); err != nil {
				return // revoked, or the run ended
			}
		}
		j.endGrant(ctx, g.ID, "expired", "", "")
	})
}

// endGrant ends one of the job's grants and records why.
func (j *job) endGrant(ctx workflow.Context, id, why, by, channel string) (Grant, bool) {
	i := slices.IndexFunc(j.st.Grants, func(g Grant) bool { return g.ID == id })
	if i < 0 {
		return Grant{}, false
	}
	g := j.st.Grants[i]
	j.st.Grants = slices.Delete(j.st.Grants, i, i+1)
	if stop := j.grantStop[id]; stop != nil {
		stop()
		delete(j.grantStop, id)
	}
	j.grantEnded(ctx, g, why, by, channel)
	return g, true
}

func (j *job) grantEnded(ctx workflow.Context, g Grant, why, by, channel string) {
	info := g.Info()
	j.audit(ctx, approval.AuditRecord{Event: "grant-ended", CallID: g.CallID, Rule: g.Rule, Reason: why,
		Approver: by, Channel: channel, Layer: approval.LayerHuman, Grant: &info})
	text := fmt.Sprintf("grant %s (%s) ended: %s", g.ID, g.Rule, why)
	if by != "" {
		text += " by " + who(by, channel)
	}
	j.emit(ctx, Event{Kind: "grant", Text: text})
	j.updateDetails(ctx)
}

func (j *job) grantsCtx(ctx workflow.Context, summary string) workflow.Context {
	return j.onHost(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary:             summary,
	})
}

// byGrant is layer 5 answered by a grant: the live grant that covers the
// call, or ok false (then a person is asked). The workspace's grants are
// read on its host first; which grant covers the call is recorded in
// history, as layers 1-3's verdicts are.
func (j *job) byGrant(ctx workflow.Context, found approval.Findings, rec approval.AuditRecord) (approval.AuditRecord, bool) {
	if !j.grantsOn || approval.Grantable(found.Rules, hookAsked(found)) != nil {
		return rec, false
	}
	candidates := j.liveGrants(ctx)
	if len(candidates) == 0 {
		return rec, false
	}
	call, mode := approval.Call{Tool: rec.Tool, Input: rec.Input}, j.st.Mode
	var pick int
	err := workflow.SideEffect(ctx, func(workflow.Context) any {
		for i, g := range candidates {
			if j.policy.GrantCovers(g.Rule, call, mode) == nil {
				return i
			}
		}
		return -1
	}).Get(&pick)
	if err != nil || pick < 0 || pick >= len(candidates) {
		return rec, false
	}
	g := candidates[pick]
	if i := slices.IndexFunc(j.st.Grants, func(x Grant) bool { return x.ID == g.ID }); i >= 0 {
		j.st.Grants[i].Uses++
	}
	info := g.Info()
	rec.Grant = &info
	rec.Approver, rec.Channel = g.By, "grant"
	rec = verdictRecord(rec, approval.Verdict{Decision: approval.Allow, Layer: approval.LayerHuman, Rule: g.Rule,
		Reason: fmt.Sprintf("allowed by grant %s", grants.Text(g))})
	return rec, true
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

// liveGrants are the grants that apply to the job's calls now: its own
// job-scoped ones, then the workspace's as its host keeps them. A
// workspace grant this job gave that the host no longer has was revoked
// from another job: it ends here too.
func (j *job) liveGrants(ctx workflow.Context) []Grant {
	now := workflow.Now(ctx)
	var out []Grant
	for _, g := range j.st.Grants {
		if g.Scope == ScopeJob && now.Before(g.Until) {
			out = append(out, g)
		}
	}
	if j.wsRead == nil {
		// One read for all the calls of one model answer: they wait on it
		// together and go on in call order, as they would ask without it.
		j.wsRead = workflow.ExecuteActivity(j.grantsCtx(ctx, "read workspace grants"), api.WorkspaceGrantsActivity,
			api.WorkspaceGrantsRequest{Workspace: j.in.Workspace})
	}
	var res api.WorkspaceGrantsResult
	if err := j.wsRead.Get(ctx, &res); err != nil {
		// Fail closed: without the host's list, no workspace grant applies.
		j.emit(ctx, Event{Kind: "error", Text: fmt.Sprintf("could not read the workspace's grants: %v; a person is asked", err)})
		j.wsGrants = nil
		return out
	}
	j.wsGrants = j.wsGrants[:0]
	for _, i := range res.Grants {
		if now.Before(i.Until) {
			j.wsGrants = append(j.wsGrants, grants.Of(i))
		}
	}
	out = append(out, j.wsGrants...)
	for _, g := range slices.Clone(j.st.Grants) {
		if g.Scope == ScopeWorkspace && !slices.ContainsFunc(res.Grants, func(i approval.GrantInfo) bool { return i.ID == g.ID }) {
			j.endGrant(ctx, g.ID, "revoked in another job of the workspace", "", "")
		}
	}
	return out
}

// statusGrants lists the live grants for the status query: the job's own,
// then the workspace's it read last (given by other jobs).
func (j *job) statusGrants() []Grant {
	out := slices.Clone(j.st.Grants)
	for _, g := range j.wsGrants {
		if !slices.ContainsFunc(out, func(x Grant) bool { return x.ID == g.ID }) {
			out = append(out, g)
		}
	}
	return out
}

// registerRevoke sets the revoke Update: it ends a grant the job gave, or
// a workspace grant it read, everywhere it applies.
func (j *job) registerRevoke(ctx workflow.Context) error {
	find := func(r Revoke) (Grant, error) {
		if j.st == nil {
			return Grant{}, notApplied("the job is still starting; try again in a moment")
		}
		id := strings.TrimSpace(r.GrantID)
		if id == "" {
			return Grant{}, notApplied("grantId is missing")
		}
		for _, g := range j.statusGrants() {
			if g.ID == id {
				return g, nil
			}
		}
		return Grant{}, notApplied("no grant %q is live in this job (see: starter grants)", id)
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, RevokeUpdate,
		func(ctx workflow.Context, r Revoke) (Grant, error) {
			g, err := find(r)
			if err != nil {
				return Grant{}, err
			}
			channel := cmp.Or(strings.TrimSpace(r.Channel), "temporal")
			if g.Scope == ScopeWorkspace {
				var res api.WorkspaceGrantsResult
				err := workflow.ExecuteActivity(j.grantsCtx(ctx, "revoke workspace grant "+g.ID), api.EndWorkspaceGrantActivity,
					api.WorkspaceGrantsRequest{Workspace: j.in.Workspace, Grant: g.Info()}).Get(ctx, &res)
				if err != nil {
					return Grant{}, temporal.NewNonRetryableApplicationError(
						fmt.Sprintf("could not revoke %s on the workspace's host: %v; it still holds", g.ID, err), "RevokeFailed", nil)
				}
				j.wsGrants = slices.DeleteFunc(j.wsGrants, func(x Grant) bool { return x.ID == g.ID })
			}
			if ended, ok := j.endGrant(ctx, g.ID, "revoked", r.By, channel); ok {
				return ended, nil
			}
			// A workspace grant another job gave: recorded here, ended on the host.
			j.grantEnded(ctx, g, "revoked", r.By, channel)
			return g, nil
		},
		workflow.UpdateHandlerOptions{
			Validator: func(r Revoke) error { _, err := find(r); return err },
			Description: `End a grant before its time, everywhere it applies: {"grantId": "g1", "by": "you"}. ` +
				`Returns the ended grant; refused (nothing recorded) for a grant that is not live.`,
		})
}

// grantDetails lists the live grants in the Web UI's details.
func (j *job) grantDetails(b *strings.Builder) {
	if j.st != nil {
		grants.Details(b, j.statusGrants())
	}
}
