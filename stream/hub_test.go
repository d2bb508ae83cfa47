package stream

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// text is what a printer would show from chunks: the text, with restarts
// and drops as markers, each chunk of reasoning in braces.
func text(cs []Chunk) string {
	var b strings.Builder
	for _, c := range cs {
		if c.Restart {
			b.WriteString("<restart>")
		}
		if c.Thought {
			b.WriteString("{" + c.Text + "}")
		} else {
			b.WriteString(c.Text)
		}
		if c.Dropped > 0 {
			b.WriteString("<dropped>")
		}
		if c.Done {
			b.WriteString("<done>")
		}
	}
	return b.String()
}

func TestHub(t *testing.T) {
	tests := []struct {
		name string
		run  func(h *Hub) *Subscription
		want string
	}{
		{
			name: "subscriber from the start sees every delta",
			run: func(h *Hub) *Subscription {
				s := h.Subscribe("j")
				w := h.Begin("j", 3, 1)
				w.Write("Hel")
				w.Write("lo")
				w.End(false)
				return s
			},
			want: "Hello<done>",
		},
		{
			name: "late subscriber gets the text so far first",
			run: func(h *Hub) *Subscription {
				w := h.Begin("j", 3, 1)
				w.Write("Hel")
				w.Write("lo ")
				s := h.Subscribe("j")
				w.Write("world")
				w.End(false)
				return s
			},
			want: "Hello world<done>",
		},
		{
			name: "a retry of the same turn is a restart, not new text",
			run: func(h *Hub) *Subscription {
				s := h.Subscribe("j")
				w := h.Begin("j", 3, 1)
				w.Write("Hello wor")
				w.End(true)
				w = h.Begin("j", 3, 2)
				w.Write("Hello world")
				w.End(false)
				return s
			},
			want: "Hello wor<done><restart>Hello world<done>",
		},
		{
			name: "a retry that had shown nothing is no restart",
			run: func(h *Hub) *Subscription {
				s := h.Subscribe("j")
				h.Begin("j", 3, 1).End(true)
				w := h.Begin("j", 3, 2)
				w.Write("Hi")
				w.End(false)
				return s
			},
			want: "<done>Hi<done>",
		},
		{
			name: "the next turn is a new answer",
			run: func(h *Hub) *Subscription {
				s := h.Subscribe("j")
				w := h.Begin("j", 3, 1)
				w.Write("one")
				w.End(false)
				w = h.Begin("j", 5, 1)
				w.Write("two")
				return s
			},
			want: "one<done>two",
		},
		{
			name: "a superseded attempt writes nothing",
			run: func(h *Hub) *Subscription {
				s := h.Subscribe("j")
				old := h.Begin("j", 3, 1)
				old.Write("a")
				w := h.Begin("j", 3, 2)
				old.Write("stale")
				old.End(true)
				w.Write("b")
				return s
			},
			want: "a<restart>b",
		},
		{
			name: "other jobs are not seen",
			run: func(h *Hub) *Subscription {
				s := h.Subscribe("j")
				h.Begin("k", 1, 1).Write("not mine")
				return s
			},
			want: "",
		},
		{
			name: "reasoning comes as chunks of its own, never merged into the text",
			run: func(h *Hub) *Subscription {
				s := h.Subscribe("j")
				w := h.Begin("j", 3, 1)
				w.Think("Let me ")
				w.Think("see.")
				w.Write("Hel")
				w.Write("lo")
				w.End(false)
				return s
			},
			want: "{Let me see.}Hello<done>",
		},
		{
			name: "a late subscriber gets the reasoning so far, then the text so far",
			run: func(h *Hub) *Subscription {
				w := h.Begin("j", 3, 1)
				w.Think("Hmm.")
				w.Write("Hel")
				s := h.Subscribe("j")
				w.Write("lo")
				w.End(false)
				return s
			},
			want: "{Hmm.}Hello<done>",
		},
		{
			name: "a subscriber that comes while the model reasons gets no empty text",
			run: func(h *Hub) *Subscription {
				w := h.Begin("j", 3, 1)
				w.Think("a")
				s := h.Subscribe("j")
				w.Think("b")
				w.Write("c")
				return s
			},
			want: "{ab}c",
		},
		{
			name: "a finished answer is not replayed to a late subscriber",
			run: func(h *Hub) *Subscription {
				w := h.Begin("j", 3, 1)
				w.Write("old")
				w.End(false)
				return h.Subscribe("j")
			},
			want: "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHub(Limits{})
			s := tc.run(h)
			defer s.Close()
			if got := text(s.Take()); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A subscriber that never reads must not block the publisher nor hold
// more than its limit; it is told what it missed.
func TestSlowSubscriber(t *testing.T) {
	h := NewHub(Limits{MaxPending: 1000})
	slow := h.Subscribe("j")
	defer slow.Close()
	w := h.Begin("j", 1, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 10000 {
			w.Write("0123456789")
		}
		w.End(false)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the publisher blocked on a subscriber that does not read")
	}
	cs := slow.Take()
	kept, dropped := 0, 0
	for _, c := range cs {
		kept += len(c.Text)
		dropped += c.Dropped
	}
	if kept > 1000 {
		t.Fatalf("the subscriber holds %d bytes, over its 1000", kept)
	}
	if kept+dropped != 100000 {
		t.Fatalf("kept %d + dropped %d, want 100000 accounted for", kept, dropped)
	}
	if len(cs) != 2 || !cs[1].Done {
		t.Fatalf("want the coalesced delta then done, got %d chunks", len(cs))
	}
}

// What the hub keeps: an answer's text while it is written, nothing once
// done, and a bounded number of finished answers' bookkeeping.
func TestBoundedMemory(t *testing.T) {
	h := NewHub(Limits{MaxText: 100, MaxIdle: 10})
	w := h.Begin("j", 1, 1)
	w.Write(strings.Repeat("x", 150))
	if st := h.Stats(); st.TextBytes != 100 {
		t.Fatalf("kept %d bytes of text, want the 100 limit", st.TextBytes)
	}
	s := h.Subscribe("j")
	cs := s.Take()
	if len(cs) != 1 || !cs[0].Snapshot || len(cs[0].Text) != 100 || cs[0].Dropped != 50 {
		t.Fatalf("late subscriber over MaxText: %+v", cs)
	}
	s.Close()
	w.End(false)
	if st := h.Stats(); st.TextBytes != 0 || st.Subscribers != 0 {
		t.Fatalf("after the answer: %+v", st)
	}
	for i := range 100 {
		w := h.Begin(string(rune('a'+i%26))+strings.Repeat("z", i), 1, 1)
		w.Write("t")
		w.End(false)
	}
	if st := h.Stats(); st.Jobs > 11 {
		t.Fatalf("%d jobs remembered, want at most MaxIdle+1", st.Jobs)
	}
}

func TestNextWaits(t *testing.T) {
	h := NewHub(Limits{})
	s := h.Subscribe("j")
	defer s.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(10 * time.Millisecond)
		h.Begin("j", 1, 1).Write("hi")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cs, err := s.Next(ctx)
	wg.Wait()
	if err != nil || text(cs) != "hi" {
		t.Fatalf("Next: %q, %v", text(cs), err)
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	if _, err := s.Next(ctx); err == nil {
		t.Fatal("Next without chunks must end with ctx")
	}
}

func TestCloseEndsNext(t *testing.T) {
	s := NewHub(Limits{}).Subscribe("j")
	go func() { time.Sleep(10 * time.Millisecond); s.Close() }()
	if _, err := s.Next(context.Background()); err != ErrClosed {
		t.Fatalf("Next after Close: %v", err)
	}
	s.Close() // twice is fine
}
