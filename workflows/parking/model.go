package parking

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/workflows/calltext"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// A model call the endpoint refuses for a reason the operator can fix (a
// bad key, an unknown model, no quota left), or answers with something that
// is not a chat completion, does not fail the job: the job parks. It calls
// again with a capped backoff, or at once when someone sends the retry
// Update (starter retry JOB); status, follow, the Web UI and the channels
// say why it waits and what to fix, once per distinct error.

// Backoff of a parked model call.
const (
	refusedFirstWait = 5 * time.Second
	garbageFirstWait = time.Second
)

// ErrContinueParked ends a run whose model call is parked, so that a long
// wait does not grow one run's history without bound.
var ErrContinueParked = errors.New("continue as new while the model call is parked")

// Model runs one model call (any model activity: the chat, the
// compaction), parking while the endpoint refuses or answers garbage.
// Histories from before parking call once.
func Model[T any](ctx workflow.Context, h Host, call func() (T, error)) (T, error) {
	if workflow.GetVersion(ctx, "model-park", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return call()
	}
	for {
		resp, err := call()
		kind := parkKind(err)
		if kind == "" {
			unpark(ctx, h, err)
			return resp, err
		}
		park(ctx, h, kind, err)
		if ctx.Err() != nil {
			return resp, err
		}
		if h.ContinueAsNew(ctx) {
			return resp, ErrContinueParked
		}
	}
}

// parkKind is refused or garbage for an error the job waits out, else "".
func parkKind(err error) string {
	var ae *temporal.ApplicationError
	if err == nil || !errors.As(err, &ae) {
		return ""
	}
	switch ae.Type() {
	case api.ModelRefusedErrorType:
		return "refused"
	case api.ModelGarbageErrorType:
		return "garbage"
	case api.DiskFullErrorType:
		// The model activity could not store the conversation or the
		// answer's blobs: waited out like the endpoint, with its own fix.
		return "disk-full"
	}
	return ""
}

// park records the failed attempt, says so once per distinct error and
// waits for the backoff or the retry Update.
func park(ctx workflow.Context, h Host, kind string, err error) {
	now := workflow.Now(ctx)
	st := h.State()
	w := st.ModelWait
	if w == nil {
		w = &jobapi.ModelWait{Since: now}
		st.ModelWait = w
	}
	msg := Message(err)
	distinct := w.Kind != kind || w.Error != msg
	w.Attempts++
	w.Kind, w.Error, w.Fix = kind, msg, FixFor(kind, h.WorkerHost, err)
	wait := ParkWait(kind, w.Attempts)
	w.NextAt = now.Add(wait)
	*h.Phase = "waiting for the model endpoint"
	if kind == "disk-full" {
		*h.Phase = PhaseDiskFull
	}
	if distinct {
		text := fmt.Sprintf("%s — attempt %d: %s; calling again within %s, or now with: starter retry %s", w.Fix, w.Attempts, msg, MaxWait, h.ID)
		h.Audit(ctx, approval.AuditRecord{Event: "model-" + kind, Reason: msg})
		h.Say(ctx, "model-wait", text)
		notifyModelWait(ctx, h, w, "")
	}
	h.UpdateDetails(ctx)
	waitRetry(ctx, h, wait)
	*h.Phase = "thinking"
}

// waitRetry waits d, or less if the retry Update comes.
func waitRetry(ctx workflow.Context, h Host, d time.Duration) {
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimerWithOptions(tctx, d, workflow.TimerOptions{Summary: "model endpoint: next attempt"})
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(timer, func(workflow.Future) {})
	sel.AddReceive(h.RetryNow, func(c workflow.ReceiveChannel, _ bool) {
		var by string
		c.Receive(ctx, &by)
		h.Say(ctx, "model-wait", "retry asked"+byWhom(by)+": calling the model endpoint now")
	})
	sel.Select(ctx)
}

func byWhom(by string) string {
	if by == "" {
		return ""
	}
	return " by " + by
}

// unpark ends a wait: the endpoint answered (or failed another way).
func unpark(ctx workflow.Context, h Host, err error) {
	st := h.State()
	w := st.ModelWait
	if w == nil {
		return
	}
	st.ModelWait = nil
	var stale string
	for h.RetryNow.ReceiveAsync(&stale) {
	}
	if err != nil {
		return
	}
	text := fmt.Sprintf("the model endpoint answers again, after %d failed attempts over %s", w.Attempts,
		workflow.Now(ctx).Sub(w.Since).Round(time.Second))
	h.Audit(ctx, approval.AuditRecord{Event: "model-recovered", Reason: text})
	h.Say(ctx, "model-wait", text)
	notifyModelWait(ctx, h, nil, text)
	h.UpdateDetails(ctx)
}

// ParkWait is the backoff before attempt n+1: doubling, capped at a minute.
func ParkWait(kind string, n int) time.Duration {
	first := garbageFirstWait
	if kind == "refused" || kind == "disk-full" {
		first = refusedFirstWait
	}
	return Backoff(first, n)
}

// FixFor says what the operator must fix, on which worker (host: the
// job's host, "" for any worker of the task queue).
func FixFor(kind, host string, err error) string {
	where := "the workers serving task queue " + api.TaskQueue
	if host != "" {
		where = "host " + host + "'s worker"
	}
	if kind == "disk-full" {
		return DiskFix
	}
	if kind == "garbage" {
		return "the model endpoint answers with something that is not a chat completion: check that OPENAI_BASE_URL on " + where +
			" points at an OpenAI-compatible /v1 endpoint (custos keeps retrying)"
	}
	var f api.ModelFailure
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.HasDetails() {
		_ = ae.Details(&f)
	}
	switch f.Status {
	case 401:
		return "the endpoint refuses the key: set OPENAI_API_KEY on " + where
	case 403:
		return "the endpoint forbids this key the request: give the key access to model " + f.Model + ", or set OPENAI_API_KEY on " + where
	case 404:
		return "the endpoint does not know model " + f.Model + ": set OPENAI_MODEL (or the job's model) or OPENAI_BASE_URL on " + where
	}
	return "the endpoint's account has no quota or credit left (HTTP " + fmt.Sprint(f.Status) + "): add credit or raise the quota of the key set as OPENAI_API_KEY on " + where
}

// notifyModelWait tells the worker's channels why the job waits (w), or
// that it goes on again (w nil, text says so).
func notifyModelWait(ctx workflow.Context, h Host, w *jobapi.ModelWait, text string) {
	n := notify.Notice{JobID: h.ID, Workspace: h.Workspace, Kind: "model-recovered", Text: text, At: workflow.Now(ctx)}
	if w != nil {
		n.Kind, n.Text, n.Fix, n.Error, n.Retry = "model-wait", w.Fix, w.Fix, w.Error, jobapi.RetryUpdate
	}
	h.Announce(ctx, n, "could not announce that the job waits for the model endpoint")
}

// ModelWaitDetails shows in the Web UI why the job (id) waits for the
// model endpoint, what to fix and how to make it try now.
func ModelWaitDetails(b *strings.Builder, st *jobapi.State, id string) {
	if st == nil || st.ModelWait == nil {
		return
	}
	w := st.ModelWait
	fmt.Fprintf(b, "### Waiting for the model endpoint\n\n%s.\n\n", display.SafeLine(w.Fix))
	fmt.Fprintf(b, "Last error (attempt %d, failing since %s): %s\n\n", w.Attempts, w.Since.UTC().Format("2006-01-02 15:04:05Z"),
		calltext.CodeSpan(display.Line(w.Error, 500)))
	fmt.Fprintf(b, "Next attempt at %s. To try now: %s, or Update `%s` with input `{}`.\n\n",
		w.NextAt.UTC().Format("2006-01-02 15:04:05Z"), calltext.CodeSpan("starter retry "+display.Line(id, 200)), jobapi.RetryUpdate)
}
