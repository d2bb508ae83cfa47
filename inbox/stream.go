package inbox

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/custos-dev/custos/jobevents"
)

// jobView is the job page: what the job does, its model's text as it is
// written, rendered from the job's one stream of events (jobevents).
type jobPageView struct {
	Prefix, Job string
	Live        bool // the page can follow the job's events
}

func (h *Handler) jobPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, "job", jobPageView{Prefix: h.o.Prefix, Job: r.PathValue("id"), Live: h.o.Stream != nil || h.temporal != nil})
}

// journalPoll is how often the job page's stream reads the job's journal.
const journalPoll = 300 * time.Millisecond

// jobStream serves a job's events (package jobevents, the vocabulary the
// terminal, --json and ACP render) as server-sent "job-event" events whose
// data is the event's JSON, its "type" first: the journal from its start,
// the model's text as it is written (this process's workers' hub, or
// relayed from the worker that runs the model call), and the job's result
// last, when it completes.
func (h *Handler) jobStream(w http.ResponseWriter, r *http.Request) {
	if h.o.Stream == nil && h.temporal == nil {
		http.Error(w, "custos inbox: this process publishes no model answers (CUSTOS_STREAM=0, or its workers run elsewhere)", http.StatusNotFound)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "custos inbox: streaming unsupported", http.StatusInternalServerError)
		return
	}
	ctx, id := r.Context(), r.PathValue("id")
	src, done := h.jobSource(ctx, id)
	defer src.Close()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	if _, err := io.WriteString(w, ": custos job events\n\n"); err != nil {
		return
	}
	send := func(evs []jobevents.Event) bool { return writeEvents(w, evs) }
	if !send(src.Journal(ctx)) {
		return
	}
	flusher.Flush()
	tick, beat := time.NewTicker(journalPoll), time.NewTicker(heartbeat)
	defer tick.Stop()
	defer beat.Stop()
	for {
		var evs []jobevents.Event
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
		case <-src.Ready():
			evs = src.Live(ctx)
		case <-tick.C:
			evs = src.Journal(ctx)
		case o := <-done:
			evs = append(src.Journal(ctx), jobevents.Finished(ctx, h.temporal, id, o.Result, o.Err))
			send(evs)
			flusher.Flush()
			return
		}
		if !send(evs) {
			return
		}
		flusher.Flush()
	}
}

// jobSource is job id's events: its journal through the events query, its
// text from this process's hub or relayed from wherever the model call
// runs; done has the job's outcome (never, without a Temporal client).
func (h *Handler) jobSource(ctx context.Context, id string) (*jobevents.Source, <-chan jobevents.Outcome) {
	var journal jobevents.JournalFunc = noJournal
	var done <-chan jobevents.Outcome
	hub := h.o.Stream
	if h.temporal != nil {
		journal = jobevents.ClientJournal(h.temporal, id)
		done = jobevents.Await(ctx, h.temporal, id)
		if hub == nil {
			hub = jobevents.Relay(ctx, h.temporal, id)
		}
	}
	return jobevents.NewSource(journal, id, 0, hub), done
}

// writeEvents writes evs as server-sent events; JSON escapes line feeds,
// so each is one data line.
func writeEvents(w io.Writer, evs []jobevents.Event) bool {
	for _, e := range evs {
		b, err := jobevents.Marshal(e)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "event: job-event\ndata: %s\n\n", b); err != nil {
			return false
		}
	}
	return true
}

// noJournal is the journal of a page without a Temporal client: empty.
func noJournal[E any](context.Context, int) ([]E, error) { return nil, nil }
