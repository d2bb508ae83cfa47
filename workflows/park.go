package workflows

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
	maxParkWait      = time.Minute
)

// errContinueParked ends a run whose model call is parked, so that a long
// wait does not grow one run's history without bound.
var errContinueParked = errors.New("continue as new while the model call is parked")

// registerRetry sets the retry Update: it cuts a parked model call's
// backoff. Its validator refuses it, leaving no trace, when the job is not
// waiting for the model endpoint.
func (j *job) registerRetry(ctx workflow.Context) error {
	j.retryNow = workflow.NewBufferedChannel(ctx, 1)
	err := workflow.SetUpdateHandlerWithOptions(ctx, RetryUpdate,
		func(ctx workflow.Context, r RetryRequest) (RetryResult, error) {
			w := j.st.ModelWait
			j.retryNow.SendAsync(r.By)
			return RetryResult{Kind: w.Kind, Error: w.Error, Attempts: w.Attempts}, nil
		},
		workflow.UpdateHandlerOptions{
			Validator: func(RetryRequest) error {
				if j.st == nil || j.st.ModelWait == nil {
					return notApplied("the job is not waiting for the model endpoint (it is %s); nothing to retry", j.phase)
				}
				return nil
			},
			Description: `Call the model endpoint again now, when the job waits for it (a refused key, an unknown model, no quota, answers that are not chat completions): {"by": "you"}.`,
		})
	if err != nil {
		return fmt.Errorf("register %s update: %w", RetryUpdate, err)
	}
	return nil
}

// askModel runs one model call, parking while the endpoint refuses or
// answers garbage. Histories from before parking call once.
func (j *job) askModel(ctx workflow.Context, call func() (api.ModelResponse, error)) (api.ModelResponse, error) {
	return parked(ctx, j, call)
}

// parked is askModel for any model activity (the chat, the compaction).
func parked[T any](ctx workflow.Context, j *job, call func() (T, error)) (T, error) {
	if workflow.GetVersion(ctx, "model-park", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return call()
	}
	for {
		resp, err := call()
		kind := parkKind(err)
		if kind == "" {
			j.unpark(ctx, err)
			return resp, err
		}
		j.park(ctx, kind, err)
		if ctx.Err() != nil {
			return resp, err
		}
		if j.shouldContinueAsNew(ctx) {
			return resp, errContinueParked
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
func (j *job) park(ctx workflow.Context, kind string, err error) {
	now := workflow.Now(ctx)
	w := j.st.ModelWait
	if w == nil {
		w = &ModelWait{Since: now}
		j.st.ModelWait = w
	}
	msg := applicationMessage(err)
	distinct := w.Kind != kind || w.Error != msg
	w.Attempts++
	w.Kind, w.Error, w.Fix = kind, msg, j.fixFor(kind, err)
	wait := parkWait(kind, w.Attempts)
	w.NextAt = now.Add(wait)
	j.phase = "waiting for the model endpoint"
	if kind == "disk-full" {
		j.phase = phaseDiskFull
	}
	if distinct {
		text := fmt.Sprintf("%s — attempt %d: %s; calling again within %s, or now with: starter retry %s", w.Fix, w.Attempts, msg, maxParkWait, j.id)
		j.audit(ctx, approval.AuditRecord{Event: "model-" + kind, Reason: msg})
		j.emit(ctx, Event{Kind: "model-wait", Text: text})
		j.notifyModelWait(ctx, w, "")
	}
	j.updateDetails(ctx)
	j.waitRetry(ctx, wait)
	j.phase = "thinking"
}

// waitRetry waits d, or less if the retry Update comes.
func (j *job) waitRetry(ctx workflow.Context, d time.Duration) {
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimerWithOptions(tctx, d, workflow.TimerOptions{Summary: "model endpoint: next attempt"})
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(timer, func(workflow.Future) {})
	sel.AddReceive(j.retryNow, func(c workflow.ReceiveChannel, _ bool) {
		var by string
		c.Receive(ctx, &by)
		j.emit(ctx, Event{Kind: "model-wait", Text: "retry asked" + byWhom(by) + ": calling the model endpoint now"})
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
func (j *job) unpark(ctx workflow.Context, err error) {
	w := j.st.ModelWait
	if w == nil {
		return
	}
	j.st.ModelWait = nil
	var stale string
	for j.retryNow.ReceiveAsync(&stale) {
	}
	if err != nil {
		return
	}
	text := fmt.Sprintf("the model endpoint answers again, after %d failed attempts over %s", w.Attempts,
		workflow.Now(ctx).Sub(w.Since).Round(time.Second))
	j.audit(ctx, approval.AuditRecord{Event: "model-recovered", Reason: text})
	j.emit(ctx, Event{Kind: "model-wait", Text: text})
	j.notifyModelWait(ctx, nil, text)
	j.updateDetails(ctx)
}

// parkWait is the backoff before attempt n+1: doubling, capped at a minute.
func parkWait(kind string, n int) time.Duration {
	first := garbageFirstWait
	if kind == "refused" || kind == "disk-full" {
		first = refusedFirstWait
	}
	return backoff(first, n)
}

// backoff is the wait before attempt n+1 of a job waiting something out:
// first, doubling, capped at maxParkWait.
func backoff(first time.Duration, n int) time.Duration {
	d := first
	for i := 1; i < n && d < maxParkWait; i++ {
		d *= 2
	}
	return min(d, maxParkWait)
}

// fixFor says what the operator must fix, on which worker.
func (j *job) fixFor(kind string, err error) string {
	where := "the workers serving task queue " + api.TaskQueue
	if j.in.Host != "" {
		where = "host " + j.in.Host + "'s worker"
	}
	if kind == "disk-full" {
		return diskFix
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
// that it goes on again (w nil, text says so), in a coroutine.
func (j *job) notifyModelWait(ctx workflow.Context, w *ModelWait, text string) {
	if len(j.st.Notifiers) == 0 {
		return
	}
	n := notify.Notice{JobID: j.id, Workspace: j.in.Workspace, Kind: "model-recovered", Text: text, At: workflow.Now(ctx)}
	if w != nil {
		n.Kind, n.Text, n.Fix, n.Error, n.Retry = "model-wait", w.Fix, w.Fix, w.Error, RetryUpdate
	}
	j.background(ctx, func(ctx workflow.Context) {
		actx := workflow.WithActivityOptions(ctx, withSummary(notifyOptions, "announce: "+n.Kind))
		if err := workflow.ExecuteActivity(actx, notify.NotifyNoticeActivity, n).Get(ctx, nil); err != nil {
			j.notifyFailed(ctx, "", "could not announce that the job waits for the model endpoint", err)
		}
	})
}

// modelWaitDetails shows in the Web UI why the job waits for the model
// endpoint, what to fix and how to make it try now.
func (j *job) modelWaitDetails(b *strings.Builder) {
	if j.st == nil || j.st.ModelWait == nil {
		return
	}
	w := j.st.ModelWait
	fmt.Fprintf(b, "### Waiting for the model endpoint\n\n%s.\n\n", display.SafeLine(w.Fix))
	fmt.Fprintf(b, "Last error (attempt %d, failing since %s): %s\n\n", w.Attempts, w.Since.UTC().Format("2006-01-02 15:04:05Z"),
		calltext.CodeSpan(display.Line(w.Error, 500)))
	fmt.Fprintf(b, "Next attempt at %s. To try now: %s, or Update `%s` with input `{}`.\n\n",
		w.NextAt.UTC().Format("2006-01-02 15:04:05Z"), calltext.CodeSpan("starter retry "+display.Line(j.id, 200)), RetryUpdate)
}
