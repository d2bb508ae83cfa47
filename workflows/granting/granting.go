// Package granting holds the job's grants in the workflow (package grants
// holds their pure parts): a grant given with an allow answer and kept (for
// the workspace scope on the workspace's host too), its timer, its end,
// the workspace's grants read on its host before a person is asked, the
// grant that covers a call, and the revoke Update. It never imports
// workflows; the job hands it a Host. Histories from before grants
// (Version) have none of it.
package granting

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
	"github.com/custos-dev/custos/workflows/calltext"
	"github.com/custos-dev/custos/workflows/grants"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Version gates everything about grants: a job that was running before
// them replays without a grant's activities and timers, and refuses
// GrantSpecs (its history has no place for them).
const Version = "grants"

// Keeper is what a run knows of the grants beyond the job's state.
type Keeper struct {
	// On is false in runs that began before grants (Version).
	On bool
	// stop cancels the timer of each live grant of the job.
	stop map[string]workflow.CancelFunc
	// ws are the workspace's grants as last read on its host; wsRead
	// reads them for the calls of one model answer (nil until one of
	// them needs it).
	ws     []jobapi.Grant
	wsRead workflow.Future
}

// Host is what of the job its grants read and change: its ID and
// workspace, its state (its grants, mode), the run's context (a grant's
// timer outlives one answer's work), where its activities run, whether a
// grant's rule covers a call (the job's current policy), its audit,
// journal and details.
type Host struct {
	Job, Workspace string
	State          func() *jobapi.State
	Root           workflow.Context
	OnHost         func(ctx workflow.Context, opts workflow.ActivityOptions) workflow.Context
	Covers         func(rule string, c approval.Call, m approval.Mode) error
	Audit          func(ctx workflow.Context, r approval.AuditRecord)
	Emit           func(ctx workflow.Context, e jobapi.Event)
	UpdateDetails  func(ctx workflow.Context)
}

// NewAnswer forgets the workspace's grants read for the last model
// answer's calls: the next answer's read them again.
func (k *Keeper) NewAnswer() { k.wsRead = nil }

// Give keeps the grant an accepted allow answer d carries for the call
// a: in the job's state with a timer that ends it, and for the workspace
// scope on the workspace's host too. Nil when it could not be given.
func (k *Keeper) Give(ctx workflow.Context, h Host, a jobapi.PendingAsk, d jobapi.ApprovalDecision) *jobapi.Grant {
	now := workflow.Now(ctx)
	until, err := grants.End(*d.Grant, now)
	if err != nil {
		// Validated already; time moved past an Until while the answer
		// waited. The call is still allowed once.
		h.Emit(ctx, jobapi.Event{Kind: "grant", CallID: a.CallID, Text: "grant not given: not applied: " + err.Error()})
		return nil
	}
	st := h.State()
	st.GrantSeq++
	g := jobapi.Grant{ID: fmt.Sprintf("g%d", st.GrantSeq), Rule: grants.Rule(*d.Grant, a.Rule), Scope: grants.Scope(*d.Grant),
		By: d.By, Channel: d.Channel, CallID: a.CallID, At: now.UTC(), Until: until}
	if g.Scope == jobapi.ScopeWorkspace {
		// Named by the job too, so grants of two jobs never share an ID.
		g.ID = h.Job + "." + g.ID
		err := workflow.ExecuteActivity(h.activities(ctx, "keep workspace grant "+g.Rule), api.AddWorkspaceGrantActivity,
			api.WorkspaceGrantsRequest{Workspace: h.Workspace, Grant: g.Info()}).Get(ctx, nil)
		if err != nil {
			h.Emit(ctx, jobapi.Event{Kind: "error", CallID: a.CallID, Text: fmt.Sprintf("could not keep the workspace grant %s on the host: %v; it holds in this job only", g.Rule, err)})
			g.Scope = jobapi.ScopeJob
		}
	}
	st.Grants = append(st.Grants, g)
	info := g.Info()
	h.Audit(ctx, approval.AuditRecord{Event: "grant-given", CallID: g.CallID, Tool: a.Tool, Rule: g.Rule, Decision: approval.Allow,
		Layer: approval.LayerHuman, Approver: g.By, Channel: g.Channel, Grant: &info})
	h.Emit(ctx, jobapi.Event{Kind: "grant", CallID: g.CallID, Text: "granted " + grants.Text(g)})
	k.Watch(ctx, h, g)
	return &g
}

// Watch ends g when its time comes: a durable timer, restarted from the
// carried state after continue-as-new.
func (k *Keeper) Watch(ctx workflow.Context, h Host, g jobapi.Grant) {
	// On the run's context, not the call's: an interrupt stops the work
	// of one answer, never a grant.
	if h.Root != nil {
		ctx = h.Root
	}
	tctx, cancel := workflow.WithCancel(ctx)
	if k.stop == nil {
		k.stop = map[string]workflow.CancelFunc{}
	}
	k.stop[g.ID] = cancel
	workflow.Go(tctx, func(ctx workflow.Context) {
		if d := g.Until.Sub(workflow.Now(ctx)); d > 0 {
			t := workflow.NewTimerWithOptions(ctx, d, workflow.TimerOptions{Summary: "grant ends " + g.ID})
			if err := t.Get(ctx, nil); err != nil {
				return // revoked, or the run ended
			}
		}
		k.End(ctx, h, g.ID, "expired", "", "")
	})
}

// End ends one of the job's grants and records why.
func (k *Keeper) End(ctx workflow.Context, h Host, id, why, by, channel string) (jobapi.Grant, bool) {
	st := h.State()
	i := slices.IndexFunc(st.Grants, func(g jobapi.Grant) bool { return g.ID == id })
	if i < 0 {
		return jobapi.Grant{}, false
	}
	g := st.Grants[i]
	st.Grants = slices.Delete(st.Grants, i, i+1)
	if stop := k.stop[id]; stop != nil {
		stop()
		delete(k.stop, id)
	}
	ended(ctx, h, g, why, by, channel)
	return g, true
}

func ended(ctx workflow.Context, h Host, g jobapi.Grant, why, by, channel string) {
	info := g.Info()
	h.Audit(ctx, approval.AuditRecord{Event: "grant-ended", CallID: g.CallID, Rule: g.Rule, Reason: why,
		Approver: by, Channel: channel, Layer: approval.LayerHuman, Grant: &info})
	text := fmt.Sprintf("grant %s (%s) ended: %s", g.ID, g.Rule, why)
	if by != "" {
		text += " by " + calltext.Who(by, channel)
	}
	h.Emit(ctx, jobapi.Event{Kind: "grant", Text: text})
	h.UpdateDetails(ctx)
}

func (h Host) activities(ctx workflow.Context, summary string) workflow.Context {
	return h.OnHost(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary:             summary,
	})
}

// Covering is the live grant that covers call, counted as used, or ok
// false (then a person is asked). The workspace's grants are read on its
// host first; which grant covers the call is recorded in history, as
// layers 1-3's verdicts are.
func (k *Keeper) Covering(ctx workflow.Context, h Host, call approval.Call) (jobapi.Grant, bool) {
	candidates := k.live(ctx, h)
	if len(candidates) == 0 {
		return jobapi.Grant{}, false
	}
	st := h.State()
	mode := st.Mode
	var pick int
	err := workflow.SideEffect(ctx, func(workflow.Context) any {
		for i, g := range candidates {
			if h.Covers(g.Rule, call, mode) == nil {
				return i
			}
		}
		return -1
	}).Get(&pick)
	if err != nil || pick < 0 || pick >= len(candidates) {
		return jobapi.Grant{}, false
	}
	g := candidates[pick]
	if i := slices.IndexFunc(st.Grants, func(x jobapi.Grant) bool { return x.ID == g.ID }); i >= 0 {
		st.Grants[i].Uses++
	}
	return g, true
}

// live are the grants that apply to the job's calls now: its own
// job-scoped ones, then the workspace's as its host keeps them. A
// workspace grant this job gave that the host no longer has was revoked
// from another job: it ends here too.
func (k *Keeper) live(ctx workflow.Context, h Host) []jobapi.Grant {
	now := workflow.Now(ctx)
	var out []jobapi.Grant
	for _, g := range h.State().Grants {
		if g.Scope == jobapi.ScopeJob && now.Before(g.Until) {
			out = append(out, g)
		}
	}
	if k.wsRead == nil {
		// One read for all the calls of one model answer: they wait on it
		// together and go on in call order, as they would ask without it.
		k.wsRead = workflow.ExecuteActivity(h.activities(ctx, "read workspace grants"), api.WorkspaceGrantsActivity,
			api.WorkspaceGrantsRequest{Workspace: h.Workspace})
	}
	var res api.WorkspaceGrantsResult
	if err := k.wsRead.Get(ctx, &res); err != nil {
		// Fail closed: without the host's list, no workspace grant applies.
		h.Emit(ctx, jobapi.Event{Kind: "error", Text: fmt.Sprintf("could not read the workspace's grants: %v; a person is asked", err)})
		k.ws = nil
		return out
	}
	k.ws = k.ws[:0]
	for _, i := range res.Grants {
		if now.Before(i.Until) {
			k.ws = append(k.ws, grants.Of(i))
		}
	}
	out = append(out, k.ws...)
	for _, g := range slices.Clone(h.State().Grants) {
		if g.Scope == jobapi.ScopeWorkspace && !slices.ContainsFunc(res.Grants, func(i approval.GrantInfo) bool { return i.ID == g.ID }) {
			k.End(ctx, h, g.ID, "revoked in another job of the workspace", "", "")
		}
	}
	return out
}

// Live lists the live grants for the status query: the job's own, then
// the workspace's it read last (given by other jobs).
func (k *Keeper) Live(own []jobapi.Grant) []jobapi.Grant {
	out := slices.Clone(own)
	for _, g := range k.ws {
		if !slices.ContainsFunc(out, func(x jobapi.Grant) bool { return x.ID == g.ID }) {
			out = append(out, g)
		}
	}
	return out
}

// notApplied is the error a revoke that did not count gets.
func notApplied(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError("not applied: "+fmt.Sprintf(format, args...), "NotApplied", nil)
}

// Register sets the revoke Update: it ends a grant the job gave, or a
// workspace grant it read, everywhere it applies.
func (k *Keeper) Register(ctx workflow.Context, h Host) error {
	find := func(r jobapi.Revoke) (jobapi.Grant, error) {
		st := h.State()
		if st == nil {
			return jobapi.Grant{}, notApplied("the job is still starting; try again in a moment")
		}
		id := strings.TrimSpace(r.GrantID)
		if id == "" {
			return jobapi.Grant{}, notApplied("grantId is missing")
		}
		for _, g := range k.Live(st.Grants) {
			if g.ID == id {
				return g, nil
			}
		}
		return jobapi.Grant{}, notApplied("no grant %q is live in this job (see: starter grants)", id)
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, jobapi.RevokeUpdate,
		func(ctx workflow.Context, r jobapi.Revoke) (jobapi.Grant, error) {
			g, err := find(r)
			if err != nil {
				return jobapi.Grant{}, err
			}
			channel := cmp.Or(strings.TrimSpace(r.Channel), "temporal")
			if g.Scope == jobapi.ScopeWorkspace {
				var res api.WorkspaceGrantsResult
				err := workflow.ExecuteActivity(h.activities(ctx, "revoke workspace grant "+g.ID), api.EndWorkspaceGrantActivity,
					api.WorkspaceGrantsRequest{Workspace: h.Workspace, Grant: g.Info()}).Get(ctx, &res)
				if err != nil {
					return jobapi.Grant{}, temporal.NewNonRetryableApplicationError(
						fmt.Sprintf("could not revoke %s on the workspace's host: %v; it still holds", g.ID, err), "RevokeFailed", nil)
				}
				k.ws = slices.DeleteFunc(k.ws, func(x jobapi.Grant) bool { return x.ID == g.ID })
			}
			if done, ok := k.End(ctx, h, g.ID, "revoked", r.By, channel); ok {
				return done, nil
			}
			// A workspace grant another job gave: recorded here, ended on the host.
			ended(ctx, h, g, "revoked", r.By, channel)
			return g, nil
		},
		workflow.UpdateHandlerOptions{
			Validator: func(r jobapi.Revoke) error { _, err := find(r); return err },
			Description: `End a grant before its time, everywhere it applies: {"grantId": "g1", "by": "you"}. ` +
				`Returns the ended grant; refused (nothing recorded) for a grant that is not live.`,
		})
}
