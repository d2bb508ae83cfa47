package jobevents

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/stream"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// JournalFunc reads the workflow's journal after since (the events query).
type JournalFunc func(ctx context.Context, since int) ([]jobapi.Event, error)

// ClientJournal is the journal of job id through c's events query.
func ClientJournal(c client.Client, id string) JournalFunc {
	return func(ctx context.Context, since int) ([]jobapi.Event, error) {
		v, err := c.QueryWorkflow(ctx, id, "", jobapi.EventsQuery, since)
		if err != nil {
			return nil, err
		}
		var evs []jobapi.Event
		return evs, v.Get(&evs)
	}
}

// Source merges one job's journal and its live text into Events, in the
// order a person reads them: the results of a turn before the model's next
// text, the text of a turn before the turn's journal event, each answer
// once. It is pulled: Live when Ready has a value, Journal on a tick or
// before the follower acts (a prompt). Not safe for concurrent use; Follow
// drives one from a goroutine of its own.
type Source struct {
	journal JournalFunc
	since   int
	sub     *stream.Subscription // nil: no live text
	queue   []stream.Chunk       // taken from sub, not turned into events yet
	// open is the answer being given (turn/attempt), "" between answers;
	// thinking the one whose reasoning was given last.
	open     string
	thinking string
	text     strings.Builder // the open answer's text
	partial  bool            // some of it was dropped
	// shown are answers given in full as Text, until the journal event of
	// their turn (or the job's answer) claims them.
	shown []string
	// answeredTurn is the turn of the last answer given.
	answeredTurn int
}

// NewSource follows a job's journal after since and, when hub is not nil,
// its text as the hub carries it (the in-process worker's, or one a Relay
// feeds). Close it when done.
func NewSource(journal JournalFunc, job string, since int, hub *stream.Hub) *Source {
	s := &Source{journal: journal, since: since}
	if hub != nil {
		s.sub = hub.Subscribe(job)
	}
	return s
}

// Since is the journal sequence of the last event given.
func (s *Source) Since() int { return s.since }

// Ready has a value when live text waits (never without a hub).
func (s *Source) Ready() <-chan struct{} {
	if s.sub == nil {
		return nil
	}
	return s.sub.Ready()
}

// Close stops the live text.
func (s *Source) Close() {
	if s.sub != nil {
		s.sub.Close()
	}
}

// Live is the text waiting. When it begins an answer the journal's new
// events come first, so the tool results of the turn before precede the
// model's next text.
func (s *Source) Live(ctx context.Context) []Event {
	if s.sub == nil {
		return nil
	}
	s.queue = append(s.queue, s.sub.Take()...)
	var out []Event
	if len(s.queue) > 0 {
		c := s.queue[0]
		if k := key(c); c.Restart || (s.open != k && s.thinking != k) {
			out = s.Journal(ctx) // may give some of the queue itself
		}
	}
	return s.drain(out, false)
}

// Journal is the journal's events after the last one given. A model turn
// whose text is still queued gets that text first.
func (s *Source) Journal(ctx context.Context) []Event {
	evs, err := s.journal(ctx, s.since)
	if err != nil {
		return nil
	}
	var out []Event
	for _, e := range evs {
		// Events restart from the carried sequence after continue-as-new;
		// anything at or below since was given already.
		if e.Seq <= s.since {
			continue
		}
		s.since = e.Seq
		switch ev := FromJournal(e).(type) {
		case Model:
			out = s.claimModel(out, ev)
		case Answer:
			out = s.drain(out, false)
			ev.Streamed = s.streamed(ev.Text)
			s.answeredTurn = ev.Turn
			out = append(out, ev)
		default:
			out = append(out, ev)
		}
	}
	return out
}

// Streamed reports whether answer was given as Text in full (taking the
// text still queued first), so a follower does not give it again.
func (s *Source) Streamed(answer string) ([]Event, bool) {
	if s.sub != nil {
		s.queue = append(s.queue, s.sub.Take()...)
	}
	out := s.drain(nil, false)
	return out, s.streamed(answer)
}

func (s *Source) streamed(answer string) bool {
	answer = strings.TrimSpace(answer)
	for _, t := range s.shown {
		if t == answer {
			return true
		}
	}
	return false
}

// claimModel appends a model turn's event, after its text when that is
// still queued (its text is published before the activity returns).
func (s *Source) claimModel(out []Event, m Model) []Event {
	text := strings.TrimSpace(m.Text)
	if !s.claim(&m, text) && s.sub != nil {
		s.queue = append(s.queue, s.sub.Take()...)
		out = s.drain(out, true)
		s.claim(&m, text)
	}
	return append(out, m)
}

// claim marks m as streamed when a streamed answer is the start of its
// text.
func (s *Source) claim(m *Model, text string) bool {
	for i, t := range s.shown {
		if !strings.HasPrefix(text, t) {
			continue
		}
		m.Streamed, m.Shown = true, t
		s.shown = append(s.shown[:i], s.shown[i+1:]...)
		if strings.TrimSpace(strings.TrimPrefix(text, t)) == "" {
			// The final answer: its answer event (or the job's result)
			// claims it again.
			s.shown = append(s.shown, t)
		}
		return true
	}
	return false
}

// drain turns the queued chunks into Text events; oneAnswer stops after
// the first answer that ended well.
func (s *Source) drain(out []Event, oneAnswer bool) []Event {
	for len(s.queue) > 0 {
		c := s.queue[0]
		s.queue = s.queue[1:]
		if c.Thought {
			s.thinking = key(c)
			out = append(out, Thought{Turn: c.Turn, Attempt: c.Attempt, Text: c.Text, Dropped: c.Dropped})
			continue
		}
		out = append(out, s.chunk(c))
		if oneAnswer && c.Done && !c.Failed {
			return out
		}
	}
	s.queue = nil
	return out
}

func key(c stream.Chunk) string { return fmt.Sprintf("%d/%d", c.Turn, c.Attempt) }

// chunk is the Text event of c.
func (s *Source) chunk(c stream.Chunk) Text {
	t := Text{Turn: c.Turn, Attempt: c.Attempt, Text: c.Text, Restart: c.Restart, Dropped: c.Dropped, End: c.Done, Failed: c.Failed}
	if k := key(c); c.Restart || s.open != k || c.Snapshot {
		t.Begin = true
		s.open, s.partial = k, false
		s.text.Reset()
	}
	s.text.WriteString(c.Text)
	if c.Dropped > 0 {
		s.partial = true // not given in full: its journal event gives it
	}
	if c.Done {
		if text := strings.TrimSpace(s.text.String()); !c.Failed && !s.partial && text != "" {
			s.shown = append(s.shown, text)
			if n := len(s.shown) - maxShown; n > 0 {
				s.shown = s.shown[n:]
			}
		}
		s.open = ""
	}
	return t
}

// maxShown bounds the answers remembered for their journal events.
const maxShown = 8
