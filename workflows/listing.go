package workflows

import (
	"reflect"

	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/workflows/calltext"
	"github.com/custos-dev/custos/workflows/parking"
)

// listingVersion gates the memo upserts: runs that began before them
// replay without the commands.
const listingVersion = "job-listing"

// maxListedCalls caps the waiting calls a listing names (the memo stays
// small; status JOB has them all).
const maxListedCalls = 20

// listing is the job's Listing now (Since unset).
func (j *job) listing() Listing {
	l := Listing{Phase: j.phase, Task: calltext.CutRunes(calltext.FirstLine(j.in.Task, 1<<20), 120), Workspace: j.in.Workspace, Host: j.in.Host}
	if j.st != nil {
		l.Turn, l.Mode = j.st.Turn, string(j.st.Mode)
	}
	for _, id := range j.order {
		if len(l.Waiting) == maxListedCalls {
			break
		}
		a := j.pending[id].ask
		l.Waiting = append(l.Waiting, ListedCall{Call: id, Tool: a.Tool, Summary: calltext.CutRunes(a.Summary, 200)})
	}
	l.Status, l.Why = ListingStatus(j.phase, len(j.order), j.st != nil && j.st.ModelWait != nil)
	if l.Status == ListEnded {
		l.Why = j.endHow
	}
	return l
}

// ListingStatus is the listed status of a job in phase, with waiting calls
// waiting for a person and parked on its model endpoint or not, and why it
// is parked.
func ListingStatus(phase string, waiting int, modelWait bool) (status, why string) {
	switch {
	case waiting > 0:
		return ListWaitingPerson, ""
	case phase == PhaseWaitingMessage:
		return ListWaitingMessage, ""
	case phase == PhaseWaitingBudget:
		return ListParked, "budget"
	case phase == parking.PhaseDiskFull:
		return ListParked, "disk space"
	case modelWait:
		return ListParked, "model endpoint"
	case phase == PhaseDone || phase == PhaseEnded || phase == "canceled":
		return ListEnded, ""
	}
	return ListWorking, ""
}

// upsertListing keeps the job's memo in step with its listing: one upsert
// when it changed, none otherwise (history grows with status changes, not
// with calls to updateDetails).
func (j *job) upsertListing(ctx workflow.Context) {
	if workflow.GetVersion(ctx, listingVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	l := j.listing()
	if j.listed != nil && reflect.DeepEqual(*j.listed, l) {
		return
	}
	j.listed = &l
	l.Since = workflow.Now(ctx).UTC()
	if err := workflow.UpsertMemo(ctx, map[string]any{ListingMemo: l}); err != nil {
		j.logger.Warn("listing memo not updated", "error", err)
	}
}
