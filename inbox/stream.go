package inbox

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// jobView is the job page: the model's answer as it is written.
type jobPageView struct {
	Prefix, Job string
	Live        bool // this process's workers publish answers
}

func (h *Handler) jobPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, "job", jobPageView{Prefix: h.o.Prefix, Job: r.PathValue("id"), Live: h.o.Stream != nil})
}

// jobStream serves a job's model answers as they are written, as
// server-sent "chunk" events whose data is a stream.Chunk in JSON: the
// answer so far first, then each delta, restart and end. Only the
// answers of jobs whose model calls run on this process's workers are
// seen; the page says so.
func (h *Handler) jobStream(w http.ResponseWriter, r *http.Request) {
	if h.o.Stream == nil {
		http.Error(w, "custos inbox: this process publishes no model answers (CUSTOS_STREAM=0, or its workers run elsewhere)", http.StatusNotFound)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "custos inbox: streaming unsupported", http.StatusInternalServerError)
		return
	}
	sub := h.o.Stream.Subscribe(r.PathValue("id"))
	defer sub.Close()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	if _, err := io.WriteString(w, ": custos model stream\n\n"); err != nil {
		return
	}
	flusher.Flush()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
		case <-sub.Ready():
			for _, c := range sub.Take() {
				// JSON escapes line feeds: one data line per chunk.
				b, err := json.Marshal(c)
				if err != nil {
					return
				}
				if _, err := fmt.Fprintf(w, "event: chunk\ndata: %s\n\n", b); err != nil {
					return
				}
			}
		}
		flusher.Flush()
	}
}
