// Package stream carries a model's answer, as it is being written, from the
// model activity to whoever watches the job in the same process (the
// terminal of `starter run`, the approval inbox's job page). It is a side
// channel: nothing here is recorded, history keeps only the final message,
// and a watcher that misses text loses nothing the job needs.
//
// A Hub is keyed by job ID. The activity opens an answer with Begin and
// writes deltas to it; subscribers first get the answer's text so far (a
// late subscriber sees all of it), then each new delta. Memory is bounded:
// an answer's text is dropped once it is done, and a subscriber that does
// not keep up gets its pending deltas coalesced and, past a limit, dropped
// with a count of what it missed — the publisher never waits for anyone.
package stream

import (
	"context"
	"errors"
	"sync"
)

// Chunk is one piece of an answer as a subscriber sees it.
type Chunk struct {
	Job string `json:"job"`
	// Turn names the model call within the job (the activity uses the
	// conversation's length when the model was asked): a retry of the same
	// call has the same Turn.
	Turn int `json:"turn"`
	// Attempt is the activity attempt that writes the answer (1, 2, …).
	Attempt int `json:"attempt"`
	// Seq numbers the deltas of one attempt's answer from 1; a snapshot
	// carries the Seq of the last delta it holds.
	Seq  int    `json:"seq"`
	Text string `json:"text,omitempty"`
	// Thought: Text is the model's reasoning (an endpoint's streamed
	// reasoning_content), not its answer; it comes before the answer's
	// text and never enters it.
	Thought bool `json:"thought,omitempty"`
	// Snapshot: Text is the answer so far, sent first to a new subscriber.
	Snapshot bool `json:"snapshot,omitempty"`
	// Restart: an earlier attempt's text for this Turn was shown; what
	// follows replaces it (the answer restarted, it is not new text).
	Restart bool `json:"restart,omitempty"`
	// Done: the answer is complete (Failed: the attempt ended with an
	// error; a retry may restart it).
	Done   bool `json:"done,omitempty"`
	Failed bool `json:"failed,omitempty"`
	// Dropped is how many bytes of text this subscriber missed here
	// because it fell behind.
	Dropped int `json:"dropped,omitempty"`
}

// Limits of a Hub; zero fields take the defaults.
type Limits struct {
	// MaxText is how much of one answer is kept for late subscribers
	// (default 1 MiB); beyond it a snapshot holds the first MaxText bytes
	// and says how many it dropped.
	MaxText int
	// MaxPending is how many bytes of text a subscriber may have waiting
	// (default 256 KiB); beyond it its text is dropped and counted.
	MaxPending int
	// MaxIdle is how many finished answers' bookkeeping (turn and attempt,
	// no text) is kept to recognise a restart (default 4096).
	MaxIdle int
}

// Hub fans answers out to subscribers. The zero value is not usable; use
// NewHub. Safe for concurrent use.
type Hub struct {
	lim Limits

	mu   sync.Mutex
	jobs map[string]*answer
	subs map[string]map[*Subscription]struct{}
	idle int // answers in jobs that are done
}

// answer is the current (or last) answer of a job.
type answer struct {
	turn, attempt, seq int
	text               []byte
	over               int // bytes past MaxText not kept
	thought            []byte
	thoughtOver        int // reasoning bytes past MaxText not kept
	done               bool
}

// NewHub returns a hub with the given limits.
func NewHub(lim Limits) *Hub {
	if lim.MaxText <= 0 {
		lim.MaxText = 1 << 20
	}
	if lim.MaxPending <= 0 {
		lim.MaxPending = 256 << 10
	}
	if lim.MaxIdle <= 0 {
		lim.MaxIdle = 4096
	}
	return &Hub{lim: lim, jobs: map[string]*answer{}, subs: map[string]map[*Subscription]struct{}{}}
}

// Writer publishes one attempt's answer. Its methods never block on
// subscribers. A Writer whose attempt was superseded (a newer Begin for the
// job) writes nothing.
type Writer struct {
	h                   *Hub
	job                 string
	turn, attempt       int
	a                   *answer
	restarted, finished bool
}

// Begin opens an answer. When text of the same turn was already shown (an
// earlier attempt, or an earlier run of the same call), subscribers get a
// Restart chunk first, so that text is not taken for new text.
func (h *Hub) Begin(job string, turn, attempt int) *Writer {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.jobs[job]
	restart := prev != nil && prev.turn == turn && prev.seq > 0
	if prev != nil && prev.done {
		h.idle--
	}
	a := &answer{turn: turn, attempt: attempt}
	h.jobs[job] = a
	if restart {
		h.deliver(job, Chunk{Job: job, Turn: turn, Attempt: attempt, Restart: true})
	}
	return &Writer{h: h, job: job, turn: turn, attempt: attempt, a: a, restarted: restart}
}

// Write publishes a delta of the answer's text.
func (w *Writer) Write(delta string) { w.publish(delta, false) }

// Think publishes a delta of the model's reasoning, which subscribers get
// as Thought chunks, apart from the answer's text.
func (w *Writer) Think(delta string) { w.publish(delta, true) }

// publish keeps delta with the answer's text or its reasoning (thought)
// and delivers it, numbered in the one sequence both share.
func (w *Writer) publish(delta string, thought bool) {
	if delta == "" {
		return
	}
	h := w.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.finished || h.jobs[w.job] != w.a {
		return
	}
	a := w.a
	a.seq++
	if thought {
		a.thought, a.thoughtOver = keep(a.thought, a.thoughtOver, delta, h.lim.MaxText)
	} else {
		a.text, a.over = keep(a.text, a.over, delta, h.lim.MaxText)
	}
	h.deliver(w.job, Chunk{Job: w.job, Turn: w.turn, Attempt: w.attempt, Seq: a.seq, Text: delta, Thought: thought})
}

// keep appends delta to b up to limit bytes, counting what is left out.
func keep(b []byte, over int, delta string, limit int) ([]byte, int) {
	room := max(limit-len(b), 0)
	if room >= len(delta) {
		return append(b, delta...), over
	}
	return append(b, delta[:room]...), over + len(delta) - room
}

// End closes the answer: failed when the attempt ended with an error. The
// text is dropped; what is kept is enough to recognise a restart.
func (w *Writer) End(failed bool) {
	h := w.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.finished || h.jobs[w.job] != w.a {
		w.finished = true
		return
	}
	w.finished = true
	a := w.a
	a.done, a.text, a.thought = true, nil, nil
	h.idle++
	h.deliver(w.job, Chunk{Job: w.job, Turn: w.turn, Attempt: w.attempt, Seq: a.seq, Done: true, Failed: failed})
	h.evictIdle()
}

// evictIdle forgets finished answers nobody watches once there are more
// than MaxIdle: a restart after that long is shown as a new answer.
func (h *Hub) evictIdle() {
	for job, a := range h.jobs {
		if h.idle <= h.lim.MaxIdle {
			return
		}
		if a.done && len(h.subs[job]) == 0 {
			delete(h.jobs, job)
			h.idle--
		}
	}
}

// deliver hands c to every subscriber of job. Called with h.mu held.
func (h *Hub) deliver(job string, c Chunk) {
	for s := range h.subs[job] {
		s.push(c, h.lim.MaxPending)
	}
}

// Subscribe watches job's answers. The first chunk is the current
// answer's text so far, when one is being written. Close the
// subscription when done.
func (h *Hub) Subscribe(job string) *Subscription {
	s := &Subscription{h: h, job: job, ready: make(chan struct{}, 1), done: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[job] == nil {
		h.subs[job] = map[*Subscription]struct{}{}
	}
	h.subs[job][s] = struct{}{}
	if a := h.jobs[job]; a != nil && !a.done && a.seq > 0 {
		// The reasoning so far, then the text so far (none yet while the
		// model still reasons).
		if len(a.thought) > 0 || a.thoughtOver > 0 {
			s.push(Chunk{Job: job, Turn: a.turn, Attempt: a.attempt, Seq: a.seq, Text: string(a.thought), Thought: true, Snapshot: true, Dropped: a.thoughtOver}, h.lim.MaxPending+len(a.thought))
		}
		if len(a.text) > 0 || a.over > 0 || len(a.thought) == 0 {
			s.push(Chunk{Job: job, Turn: a.turn, Attempt: a.attempt, Seq: a.seq, Text: string(a.text), Snapshot: true, Dropped: a.over}, h.lim.MaxPending+len(a.text)+len(a.thought))
		}
	}
	return s
}

// Stats are a hub's sizes, for tests and metrics.
type Stats struct {
	Jobs, Subscribers, TextBytes int
}

// Stats counts what the hub holds now.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Stats{Jobs: len(h.jobs)}
	for _, a := range h.jobs {
		st.TextBytes += len(a.text) + len(a.thought)
	}
	for _, ss := range h.subs {
		st.Subscribers += len(ss)
	}
	return st
}

// Subscription receives one job's chunks.
type Subscription struct {
	h     *Hub
	job   string
	ready chan struct{} // a token when pending is not empty
	done  chan struct{} // closed by Close

	mu      sync.Mutex
	pending []Chunk
	bytes   int // text bytes in pending
	closed  bool
}

// maxPendingChunks bounds the chunks a subscriber may have waiting besides
// their text: control chunks (restart, done) of answer after answer.
const maxPendingChunks = 1024

// push queues c, coalescing a delta into the last pending delta of the
// same answer and, past maxBytes of waiting text, dropping its text with a
// count, so a slow subscriber costs bounded memory and never blocks.
func (s *Subscription) push(c Chunk, maxBytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	delta := !c.Restart && !c.Done
	if delta && s.bytes+len(c.Text) > maxBytes {
		c.Dropped += len(c.Text)
		c.Text = ""
	}
	if n := len(s.pending); delta && n > 0 {
		last := &s.pending[n-1]
		// Dropped counts bytes missed after Text: text may follow text,
		// a drop may follow anything, text may not follow a drop.
		if !last.Restart && !last.Done && last.Turn == c.Turn && last.Attempt == c.Attempt && last.Thought == c.Thought && (last.Dropped == 0 || c.Text == "") {
			last.Text += c.Text
			last.Dropped += c.Dropped
			last.Seq = c.Seq
			s.bytes += len(c.Text)
			s.signal()
			return
		}
	}
	if len(s.pending) >= maxPendingChunks {
		// A watcher this far behind gets what comes next, and the count.
		for _, p := range s.pending {
			c.Dropped += len(p.Text)
		}
		s.pending, s.bytes = s.pending[:0], 0
	}
	s.pending = append(s.pending, c)
	s.bytes += len(c.Text)
	s.signal()
}

func (s *Subscription) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// Ready has a value when chunks are waiting: select on it, then Take.
func (s *Subscription) Ready() <-chan struct{} { return s.ready }

// Take returns the waiting chunks, oldest first (nil when none).
func (s *Subscription) Take() []Chunk {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.pending
	s.pending, s.bytes = nil, 0
	return out
}

// ErrClosed is what Next returns once the subscription is closed.
var ErrClosed = errors.New("stream: subscription closed")

// Next waits for chunks and returns them, or ctx's error, or ErrClosed.
func (s *Subscription) Next(ctx context.Context) ([]Chunk, error) {
	for {
		if cs := s.Take(); len(cs) > 0 {
			return cs, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.done:
			return nil, ErrClosed
		case <-s.ready:
		}
	}
}

// Close stops the subscription and frees what it held.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	if ss := s.h.subs[s.job]; ss != nil {
		delete(ss, s)
		if len(ss) == 0 {
			delete(s.h.subs, s.job)
		}
	}
	s.h.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed, s.pending, s.bytes = true, nil, 0
		close(s.done)
	}
}
