package jobevents

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/stream"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Options of Follow.
type Options struct {
	// Since is the journal sequence to follow after (0: from the start).
	Since int
	// Hub is this process's worker's text (nil: the text is relayed from
	// the worker that runs the model call, wherever it runs; see Relay).
	Hub *stream.Hub
	// Poll is how often the journal and the job's status are read
	// (default 300 ms).
	Poll time.Duration
}

// Follow gives job id's events until it ends, or until it has answered and
// waits for the next message: Job first, then its steps and text as they
// happen, Result last. The channel closes after Result, or when ctx ends
// (then without a Result). It waits for no person: a call that needs one
// waits for the channels (Slack, the inbox, starter approve) or its
// timeout.
func Follow(ctx context.Context, c client.Client, id string, o Options) <-chan Event {
	out := make(chan Event, 64)
	go func() {
		defer close(out)
		follow(ctx, c, id, o, func(e Event) bool {
			select {
			case out <- e:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	return out
}

func follow(ctx context.Context, c client.Client, id string, o Options, emit func(Event) bool) {
	st, err := QueryStatus(ctx, c, id)
	if err != nil || !emit(JobOf(id, st)) {
		if err != nil {
			emit(Result{Job: id, Status: StatusFailed, Error: err.Error()})
		}
		return
	}
	hub := o.Hub
	if hub == nil {
		hub = Relay(ctx, c, id)
	}
	src := NewSource(ClientJournal(c, id), id, o.Since, hub)
	defer src.Close()
	done := Await(ctx, c, id)
	poll := o.Poll
	if poll <= 0 {
		poll = 300 * time.Millisecond
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	send := func(evs []Event) bool {
		for _, e := range evs {
			if !emit(e) {
				return false
			}
		}
		return true
	}
	answered := ""
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-done:
			send(src.Journal(ctx))
			if r.Err == nil && r.Result.Reason != "ended" && r.Result.Reason != "idle" {
				send(src.NewAnswer(r.Result.Answer, r.Result.Turns))
			}
			emit(Finished(ctx, c, id, r.Result, r.Err))
			return
		case <-src.Ready():
			if !send(src.Live(ctx)) {
				return
			}
			continue
		case <-tick.C:
		}
		if !send(src.Journal(ctx)) {
			return
		}
		st, err := QueryStatus(ctx, c, id)
		if err != nil || !WaitsForMessage(st) || StatusKey(st) == answered {
			continue
		}
		answered = StatusKey(st)
		send(src.Journal(ctx))
		send(src.NewAnswer(st.LastAnswer, st.Turn))
		emit(Answered(id, st))
		return
	}
}

// NewAnswer is the job's answer of turn as an event (after the text still
// queued), unless the journal gave that turn's answer already.
func (s *Source) NewAnswer(answer string, turn int) []Event {
	out, streamed := s.Streamed(answer)
	if s.answeredTurn != turn {
		s.answeredTurn = turn
		out = append(out, Answer{Turn: turn, Text: answer, Streamed: streamed})
	}
	return out
}

// Outcome is how a job's workflow completed.
type Outcome struct {
	Result jobapi.JobResult
	Err    error
}

// Await delivers the job's outcome once its last run completes
// (continue-as-new is followed), or nothing when ctx ends first.
func Await(ctx context.Context, c client.Client, id string) <-chan Outcome {
	done := make(chan Outcome, 1)
	go func() {
		var res jobapi.JobResult
		err := c.GetWorkflow(ctx, id, "").Get(ctx, &res)
		if ctx.Err() != nil {
			return
		}
		done <- Outcome{res, err}
	}()
	return done
}

// QueryStatus is the job's status query.
func QueryStatus(ctx context.Context, c client.Client, id string) (jobapi.Status, error) {
	var st jobapi.Status
	v, err := c.QueryWorkflow(ctx, id, "", jobapi.StatusQuery)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

// WaitsForMessage says whether a job has answered and waits for a person.
func WaitsForMessage(st jobapi.Status) bool {
	return st.State == jobapi.PhaseWaitingMessage && st.Queued == 0
}

// StatusKey names the answer a waiting job gave: a follower that gave it
// waits for a new one.
func StatusKey(st jobapi.Status) string {
	return fmt.Sprint(st.Runs, st.Turn, st.Messages)
}

// JobOf is the Job event of a job's status.
func JobOf(id string, st jobapi.Status) Job {
	return Job{Job: id, Workspace: st.Workspace, Host: st.Host}
}

// turnLimitText begins the answer the workflow gives when the turn limit
// stops the model.
const turnLimitText = "Stopped: the turn limit ("

// Answered is the Result of a job that answered and waits for a message.
func Answered(id string, st jobapi.Status) Result {
	r := Result{Job: id, Status: StatusAnswered, Answer: st.LastAnswer, Turns: st.Turn, Usage: st.Usage}
	if strings.HasPrefix(st.LastAnswer, turnLimitText) {
		r.Status = StatusMaxTurns
	}
	return r
}

// Finished is the Result of a job whose workflow completed with res or
// err. A job ended while its budget was reached is StatusBudget.
func Finished(ctx context.Context, c client.Client, id string, res jobapi.JobResult, err error) Result {
	r := Result{Job: id, Answer: res.Answer, Turns: res.Turns, Usage: res.Usage}
	switch {
	case err != nil:
		r.Status, r.Error = StatusFailed, err.Error()
		var canceled *temporal.CanceledError
		if errors.As(err, &canceled) {
			r.Error = "canceled: " + err.Error()
		}
	case res.Reason == "max turns":
		r.Status = StatusMaxTurns
	case res.Reason == "ended" || res.Reason == "idle":
		r.Status = StatusEnded
		if st, err := QueryStatus(ctx, c, id); err == nil && st.Budget.Reached != "" {
			r.Status = StatusBudget
		}
	default:
		r.Status = StatusDone
	}
	return r
}
