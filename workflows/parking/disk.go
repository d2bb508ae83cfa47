// Package parking holds the job's waits for disk space: the workflow's
// save after a batch of tool calls, and a tool call whose record the full
// state directory refused, wait with a capped backoff until it goes
// through. It never imports workflows; the job hands it a Host.
package parking

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/workflows/calltext"
	"github.com/custos-dev/custos/workflows/jobapi"
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
// (doubling to MaxWait, like a parked model call); toolDiskParkChange
// guards the wait of a tool call whose checkpoint the full state
// directory refused.
const (
	diskParkChange     = "disk-park"
	toolDiskParkChange = "tool-disk-park"
	diskFirstWait      = 5 * time.Second
	// MaxWait caps the backoff of anything a job waits out.
	MaxWait = time.Minute
	// PhaseDiskFull is the job's phase while it waits for disk space.
	PhaseDiskFull = "waiting for disk space"
)

// DiskFix is what the operator must do.
const DiskFix = "the disk holding custos' state directory is full: free some space on it; the job runs no tool call until its transcript, audit and checkpoints are saved, and saves again by itself"

// DiskWait is a save the full disk keeps refusing, or the tool calls it
// keeps custos from recording (calls: how many wait; resume: the phase
// they came from).
type DiskWait struct {
	err      string
	attempts int
	since    time.Time
	nextAt   time.Time
	calls    int
	resume   string
}

// Host is what of the job a wait reads and changes: its state, phase and
// current disk wait (shared with its other coroutines), its save, audit,
// journal (Say: an event of kind), channels (Announce: what names the
// notice when it fails), details, and whether the run should continue as
// new; ID, WorkerHost and Workspace name the job to people.
type Host struct {
	State                     func() *jobapi.State
	Phase                     *string
	Disk                      **DiskWait
	RetryNow                  workflow.Channel
	Save                      func(ctx workflow.Context) error
	Audit                     func(ctx workflow.Context, r approval.AuditRecord)
	Say                       func(ctx workflow.Context, kind, text string)
	Announce                  func(ctx workflow.Context, n notify.Notice, what string)
	UpdateDetails             func(ctx workflow.Context)
	ContinueAsNew             func(ctx workflow.Context) bool
	Logger                    log.Logger
	ID, WorkerHost, Workspace string
}

// SaveOrPark saves the session after a batch of tool calls; when the disk
// is full it waits until a save goes through, so the next calls never run
// before the last ones are on disk. It reports whether it parked.
func SaveOrPark(ctx workflow.Context, h Host) (parked bool) {
	err := h.Save(ctx)
	if err == nil {
		return false
	}
	if !IsDiskFull(err) || workflow.GetVersion(ctx, diskParkChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		// The transcript is a copy for people; history is the record.
		// A failed save is logged and retried with the next turn.
		h.Logger.Warn("saving session failed", "error", err)
		return false
	}
	parkOnDisk(ctx, h, err)
	return true
}

// parkOnDisk waits out a full disk: it says so once, then saves again
// with a backoff until the save goes through, fails another way, or the
// job is canceled.
func parkOnDisk(ctx workflow.Context, h Host, err error) {
	now := workflow.Now(ctx)
	w := &DiskWait{since: now}
	*h.Disk = w
	defer func() { *h.Disk = nil }()
	msg := Message(err)
	h.Audit(ctx, approval.AuditRecord{Event: "disk-full", Reason: msg})
	h.Say(ctx, "disk-full", DiskFix+" — "+msg)
	notifyDisk(ctx, h, notify.KindDiskFull, DiskFix, msg)
	resume := *h.Phase
	for {
		w.attempts++
		w.err = Message(err)
		wait := DiskBackoff(w.attempts)
		w.nextAt = workflow.Now(ctx).Add(wait)
		*h.Phase = PhaseDiskFull
		h.UpdateDetails(ctx)
		if workflow.NewTimerWithOptions(ctx, wait, workflow.TimerOptions{Summary: "disk full: save again"}).Get(ctx, nil) != nil {
			*h.Phase = resume
			return // canceled: the caller ends the job
		}
		if err = h.Save(ctx); err == nil || !IsDiskFull(err) {
			break
		}
	}
	*h.Phase = resume
	if err != nil {
		h.Logger.Warn("saving session failed", "error", err)
		return
	}
	text := fmt.Sprintf("the transcript and audit are saved again, after %d failed attempts over %s; the job goes on",
		w.attempts, workflow.Now(ctx).Sub(w.since).Round(time.Second))
	h.Say(ctx, "disk-full", text)
	notifyDisk(ctx, h, notify.KindDiskRecovered, text, "")
	h.UpdateDetails(ctx)
}

// RunTool runs an allowed call's tool (run). What custos cannot record in
// its own state directory (a Write's or an Edit's checkpoint) is not the
// model's business: the activity says DiskFull, and the call waits with
// the job (status, follow, the Web UI and the channels say why, once for
// all the calls that wait) and runs again, with a backoff, until the
// record goes through, it fails another way, or the job is stopped. Only
// a full workspace comes back to the model, as the tool's result.
func RunTool(ctx workflow.Context, h Host, tool string, run func() (api.ToolResult, error)) (api.ToolResult, error) {
	res, err := run()
	if !IsDiskFull(err) || ctx.Err() != nil ||
		workflow.GetVersion(ctx, toolDiskParkChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return res, err
	}
	w := waitForDisk(ctx, h, err)
	for n := 1; IsDiskFull(err); n++ {
		w.attempts++
		w.err = Message(err)
		w.nextAt = workflow.Now(ctx).Add(DiskBackoff(n))
		h.UpdateDetails(ctx)
		if workflow.NewTimerWithOptions(ctx, DiskBackoff(n), workflow.TimerOptions{Summary: "disk full: run " + tool + " again"}).Get(ctx, nil) != nil {
			break // stopped: the model is told who stopped the call
		}
		res, err = run()
	}
	diskWaitDone(ctx, h, w, err)
	return res, err
}

// waitForDisk joins the job's wait for disk space, or begins it and says
// so once.
func waitForDisk(ctx workflow.Context, h Host, err error) *DiskWait {
	if w := *h.Disk; w != nil {
		w.calls++
		return w
	}
	w := &DiskWait{since: workflow.Now(ctx), calls: 1, resume: *h.Phase}
	*h.Disk = w
	msg := Message(err)
	h.Audit(ctx, approval.AuditRecord{Event: "disk-full", Reason: msg})
	h.Say(ctx, "disk-full", DiskFix+" — "+msg)
	notifyDisk(ctx, h, notify.KindDiskFull, DiskFix, msg)
	*h.Phase = PhaseDiskFull
	return w
}

// diskWaitDone leaves the wait; the last call to leave ends it, saying
// that the calls run again when the last one went through.
func diskWaitDone(ctx workflow.Context, h Host, w *DiskWait, err error) {
	if w.calls--; w.calls > 0 || *h.Disk != w {
		return
	}
	*h.Disk, *h.Phase = nil, w.resume
	if err == nil && ctx.Err() == nil {
		text := fmt.Sprintf("custos records the tool calls again, after %d failed attempts over %s; the calls that waited ran",
			w.attempts, workflow.Now(ctx).Sub(w.since).Round(time.Second))
		h.Say(ctx, "disk-full", text)
		notifyDisk(ctx, h, notify.KindDiskRecovered, text, "")
	}
	h.UpdateDetails(ctx)
}

// DiskBackoff is the wait before save n+1: doubling, capped at a minute,
// so space freed is noticed soon without a save every few seconds.
func DiskBackoff(n int) time.Duration {
	return Backoff(diskFirstWait, n)
}

// Backoff is the wait before attempt n+1 of a job waiting something out:
// first, doubling, capped at MaxWait.
func Backoff(first time.Duration, n int) time.Duration {
	d := first
	for i := 1; i < n && d < MaxWait; i++ {
		d *= 2
	}
	return min(d, MaxWait)
}

// IsDiskFull reports whether err is a save the full disk refused.
func IsDiskFull(err error) bool {
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.Type() == api.DiskFullErrorType
}

// Message is an application error's own message, else err's text.
func Message(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Message()
	}
	return err.Error()
}

// DiskWaitDetails shows in the Web UI why the job waits for disk space.
func DiskWaitDetails(b *strings.Builder, w *DiskWait) {
	if w == nil {
		return
	}
	fmt.Fprintf(b, "### Waiting for disk space\n\n%s.\n\n", display.SafeLine(DiskFix))
	fmt.Fprintf(b, "Last error (attempt %d, failing since %s): %s\n\nNext save at %s.\n\n", w.attempts,
		w.since.UTC().Format("2006-01-02 15:04:05Z"), calltext.CodeSpan(display.Line(w.err, 500)), w.nextAt.UTC().Format("2006-01-02 15:04:05Z"))
}

// notifyDisk tells the worker's channels.
func notifyDisk(ctx workflow.Context, h Host, kind, text, errText string) {
	n := notify.Notice{JobID: h.ID, Workspace: h.Workspace, Kind: kind, Text: text, Error: errText, At: workflow.Now(ctx)}
	if kind == notify.KindDiskFull {
		n.Fix = DiskFix
	}
	h.Announce(ctx, n, "could not announce that the state directory is full")
}
