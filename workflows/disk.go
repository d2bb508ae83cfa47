package workflows

import (
	"encoding/json"
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

// A job writes its transcript and audit after every batch of tool calls.
// When that save fails because custos' state directory is full, running
// the next calls would leave them unaudited on disk: the job parks
// instead. It saves again with a capped backoff and goes on by itself once
// the save goes through; status, follow, the Web UI and the channels say
// why it waits. History still holds everything, so nothing is lost while
// it waits. Runs that began before this (GetVersion) log the failure and
// go on, as they did.

// diskParkChange guards the park; diskFirstWait is its first backoff
// (doubling to maxParkWait, like a parked model call).
const (
	diskParkChange = "disk-park"
	diskFirstWait  = 5 * time.Second
	phaseDiskFull  = "waiting for disk space"
)

// diskWait is a save the full disk keeps refusing, or the tool calls it
// keeps custos from recording (calls: how many wait; resume: the phase
// they came from).
type diskWait struct {
	err      string
	attempts int
	since    time.Time
	nextAt   time.Time
	calls    int
	resume   string
}

// toolDiskParkChange guards the wait of a tool call whose checkpoint the
// full state directory refused.
const toolDiskParkChange = "tool-disk-park"

// saveOrPark saves the session after a batch of tool calls; when the disk
// is full it waits until a save goes through, so the next calls never run
// before the last ones are on disk. It reports whether it parked.
func (j *job) saveOrPark(ctx workflow.Context) (parked bool) {
	err := j.save(ctx)
	if err == nil {
		return false
	}
	if !isDiskFull(err) || workflow.GetVersion(ctx, diskParkChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		// The transcript is a copy for people; history is the record.
		// A failed save is logged and retried with the next turn.
		j.logger.Warn("saving session failed", "error", err)
		return false
	}
	j.parkOnDisk(ctx, err)
	return true
}

// parkOnDisk waits out a full disk: it says so once, then saves again
// with a backoff until the save goes through, fails another way, or the
// job is canceled.
func (j *job) parkOnDisk(ctx workflow.Context, err error) {
	now := workflow.Now(ctx)
	w := &diskWait{since: now}
	j.disk = w
	defer func() { j.disk = nil }()
	msg := applicationMessage(err)
	j.audit(ctx, approval.AuditRecord{Event: "disk-full", Reason: msg})
	j.emit(ctx, Event{Kind: "disk-full", Text: diskFix + " — " + msg})
	j.notifyDisk(ctx, notify.KindDiskFull, diskFix, msg)
	resume := j.phase
	for {
		w.attempts++
		w.err = applicationMessage(err)
		wait := diskBackoff(w.attempts)
		w.nextAt = workflow.Now(ctx).Add(wait)
		j.phase = phaseDiskFull
		j.updateDetails(ctx)
		if workflow.NewTimerWithOptions(ctx, wait, workflow.TimerOptions{Summary: "disk full: save again"}).Get(ctx, nil) != nil {
			j.phase = resume
			return // canceled: the caller ends the job
		}
		if err = j.save(ctx); err == nil || !isDiskFull(err) {
			break
		}
	}
	j.phase = resume
	if err != nil {
		j.logger.Warn("saving session failed", "error", err)
		return
	}
	text := fmt.Sprintf("the transcript and audit are saved again, after %d failed attempts over %s; the job goes on",
		w.attempts, workflow.Now(ctx).Sub(w.since).Round(time.Second))
	j.emit(ctx, Event{Kind: "disk-full", Text: text})
	j.notifyDisk(ctx, notify.KindDiskRecovered, text, "")
	j.updateDetails(ctx)
}

// runTool runs an allowed call's tool. What custos cannot record in its
// own state directory (a Write's or an Edit's checkpoint) is not the
// model's business: the activity says DiskFull, and the call waits with
// the job (status, follow, the Web UI and the channels say why, once for
// all the calls that wait) and runs again, with a backoff, until the
// record goes through, it fails another way, or the job is stopped. Only
// a full workspace comes back to the model, as the tool's result.
func (j *job) runTool(ctx workflow.Context, callID, tool string, input json.RawMessage) (api.ToolResult, error) {
	res, err := j.executeTool(ctx, callID, tool, input)
	if !isDiskFull(err) || ctx.Err() != nil ||
		workflow.GetVersion(ctx, toolDiskParkChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return res, err
	}
	w := j.waitForDisk(ctx, err)
	for n := 1; isDiskFull(err); n++ {
		w.attempts++
		w.err = applicationMessage(err)
		w.nextAt = workflow.Now(ctx).Add(diskBackoff(n))
		j.updateDetails(ctx)
		if workflow.NewTimerWithOptions(ctx, diskBackoff(n), workflow.TimerOptions{Summary: "disk full: run " + tool + " again"}).Get(ctx, nil) != nil {
			break // stopped: the model is told who stopped the call
		}
		res, err = j.executeTool(ctx, callID, tool, input)
	}
	j.diskWaitDone(ctx, w, err)
	return res, err
}

// waitForDisk joins the job's wait for disk space, or begins it and says
// so once.
func (j *job) waitForDisk(ctx workflow.Context, err error) *diskWait {
	if w := j.disk; w != nil {
		w.calls++
		return w
	}
	w := &diskWait{since: workflow.Now(ctx), calls: 1, resume: j.phase}
	j.disk = w
	msg := applicationMessage(err)
	j.audit(ctx, approval.AuditRecord{Event: "disk-full", Reason: msg})
	j.emit(ctx, Event{Kind: "disk-full", Text: diskFix + " — " + msg})
	j.notifyDisk(ctx, notify.KindDiskFull, diskFix, msg)
	j.phase = phaseDiskFull
	return w
}

// diskWaitDone leaves the wait; the last call to leave ends it, saying
// that the calls run again when the last one went through.
func (j *job) diskWaitDone(ctx workflow.Context, w *diskWait, err error) {
	if w.calls--; w.calls > 0 || j.disk != w {
		return
	}
	j.disk, j.phase = nil, w.resume
	if err == nil && ctx.Err() == nil {
		text := fmt.Sprintf("custos records the tool calls again, after %d failed attempts over %s; the calls that waited ran",
			w.attempts, workflow.Now(ctx).Sub(w.since).Round(time.Second))
		j.emit(ctx, Event{Kind: "disk-full", Text: text})
		j.notifyDisk(ctx, notify.KindDiskRecovered, text, "")
	}
	j.updateDetails(ctx)
}

// diskBackoff is the wait before save n+1: doubling, capped at a minute,
// so space freed is noticed soon without a save every few seconds.
func diskBackoff(n int) time.Duration {
	return backoff(diskFirstWait, n)
}

// diskFix is what the operator must do.
const diskFix = "the disk holding custos' state directory is full: free some space on it; the job runs no tool call until its transcript, audit and checkpoints are saved, and saves again by itself"

// isDiskFull reports whether err is a save the full disk refused.
func isDiskFull(err error) bool {
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.Type() == api.DiskFullErrorType
}

// notifyDisk tells the worker's channels, in a coroutine.
func (j *job) notifyDisk(ctx workflow.Context, kind, text, errText string) {
	if len(j.st.Notifiers) == 0 {
		return
	}
	n := notify.Notice{JobID: j.id, Workspace: j.in.Workspace, Kind: kind, Text: text, Error: errText, At: workflow.Now(ctx)}
	if kind == notify.KindDiskFull {
		n.Fix = diskFix
	}
	j.background(ctx, func(ctx workflow.Context) {
		actx := workflow.WithActivityOptions(ctx, withSummary(notifyOptions, "announce: "+n.Kind))
		if err := workflow.ExecuteActivity(actx, notify.NotifyNoticeActivity, n).Get(ctx, nil); err != nil {
			j.notifyFailed(ctx, "", "could not announce that the state directory is full", err)
		}
	})
}

// diskWaitDetails shows in the Web UI why the job waits for disk space.
func (j *job) diskWaitDetails(b *strings.Builder) {
	w := j.disk
	if w == nil {
		return
	}
	fmt.Fprintf(b, "### Waiting for disk space\n\n%s.\n\n", display.SafeLine(diskFix))
	fmt.Fprintf(b, "Last error (attempt %d, failing since %s): %s\n\nNext save at %s.\n\n", w.attempts,
		w.since.UTC().Format("2006-01-02 15:04:05Z"), calltext.CodeSpan(display.Line(w.err, 500)), w.nextAt.UTC().Format("2006-01-02 15:04:05Z"))
}
