package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/jobevents"
	"github.com/custos-dev/custos/stream"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// fakeJournal is a job's journal the test appends to.
type fakeJournal struct{ evs []jobapi.Event }

func (j *fakeJournal) read(_ context.Context, since int) ([]jobapi.Event, error) {
	var out []jobapi.Event
	for _, e := range j.evs {
		if e.Seq > since {
			out = append(out, e)
		}
	}
	return out, nil
}

// liveTerm is follow's terminal over one Source.
type liveTerm struct {
	src  *jobevents.Source
	term *terminal
	j    *fakeJournal
}

func newLiveTerm(out io.Writer, h *stream.Hub) *liveTerm {
	j := &fakeJournal{}
	return &liveTerm{src: jobevents.NewSource(j.read, "j", 0, h), term: &terminal{out: out, job: "j"}, j: j}
}

func (l *liveTerm) show(evs []jobevents.Event) {
	for _, e := range evs {
		l.term.render(e)
	}
}

// The terminal shows a streamed answer once: as it comes, then the
// turn's event says only what was not streamed.
func TestLivePrinter(t *testing.T) {
	type step func(h *stream.Hub, p *liveTerm)
	ctx := context.Background()
	write := func(turn, attempt int, parts ...string) step {
		return func(h *stream.Hub, p *liveTerm) {
			w := h.Begin("j", turn, attempt)
			for _, s := range parts {
				w.Write(s)
				p.show(p.src.Live(ctx))
			}
			w.End(false)
			p.show(p.src.Live(ctx))
		}
	}
	fail := func(turn, attempt int, parts ...string) step {
		return func(h *stream.Hub, p *liveTerm) {
			w := h.Begin("j", turn, attempt)
			for _, s := range parts {
				w.Write(s)
			}
			w.End(true)
			p.show(p.src.Live(ctx))
		}
	}
	unprinted := func(turn, attempt int, text string) step {
		return func(h *stream.Hub, _ *liveTerm) {
			w := h.Begin("j", turn, attempt)
			w.Write(text)
			w.End(false)
		}
	}
	event := func(turn int, text string) step {
		return func(_ *stream.Hub, p *liveTerm) {
			p.j.evs = append(p.j.evs, jobapi.Event{Seq: len(p.j.evs) + 1, Kind: "model", Turn: turn, Text: text})
			p.show(p.src.Journal(ctx))
		}
	}
	final := func(answer string) step {
		return func(_ *stream.Hub, p *liveTerm) {
			evs, streamed := p.src.Streamed(answer)
			p.show(evs)
			if !streamed {
				p.term.render(jobevents.Answer{Text: answer})
			}
		}
	}
	tests := []struct {
		name  string
		steps []step
		want  string
	}{
		{
			name:  "a turn with calls: the text once, then the calls",
			steps: []step{write(2, 1, "I will ", "read it."), event(1, "I will read it. (calls Read)")},
			want:  "  model> I will read it.\n[turn 1] model: (text above) (calls Read)\n",
		},
		{
			name:  "an event that comes before its streamed text is printed prints the text first",
			steps: []step{unprinted(2, 1, "Let me look."), event(1, "Let me look. (calls Glob)")},
			want:  "  model> Let me look.\n[turn 1] model: (text above) (calls Glob)\n",
		},
		{
			name: "an event prints its own answer's text, not the next answer's",
			steps: []step{unprinted(2, 1, "Let me look."), unprinted(4, 1, "Now read."), event(1, "Let me look. (calls Glob)"),
				event(2, "Now read. (calls Read)")},
			want: "  model> Let me look.\n[turn 1] model: (text above) (calls Glob)\n  model> Now read.\n[turn 2] model: (text above) (calls Read)\n",
		},
		{
			name:  "the final answer is not printed again",
			steps: []step{write(4, 1, "All ", "tests pass."), event(2, "All tests pass."), final("All tests pass.")},
			want:  "  model> All tests pass.\n[turn 2] model: final answer (above)\n",
		},
		{
			name: "a restart says so and is not taken as new text",
			steps: []step{fail(2, 1, "All te"), write(2, 2, "All tests pass."), event(1, "All tests pass."),
				final("All tests pass.")},
			want: "  model> All te\n  model: answer restarted (attempt 2); what follows replaces the text above\n  model> All tests pass.\n[turn 1] model: final answer (above)\n",
		},
		{
			name:  "a failed attempt's text does not hide the event",
			steps: []step{fail(2, 1, "Half an ans"), event(1, "Another answer (calls Bash)")},
			want:  "  model> Half an ans\n[turn 1] model: Another answer (calls Bash)\n",
		},
		{
			name:  "escape sequences are shown, not run",
			steps: []step{write(2, 1, "red \x1b[31mtext\x1b[0m")},
			want:  "  model> red " + display.Safe("\x1b[31mtext\x1b[0m") + "\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := stream.NewHub(stream.Limits{})
			var out bytes.Buffer
			p := newLiveTerm(&out, h)
			defer p.src.Close()
			for _, s := range tc.steps {
				s(h, p)
			}
			assert.Equal(t, tc.want, out.String())
			assert.NotContains(t, out.String(), "\x1b")
		})
	}
}

// Without live text the events print as they always did.
func TestLivePrinterOff(t *testing.T) {
	var out bytes.Buffer
	p := newLiveTerm(&out, nil)
	defer p.src.Close()
	require.Nil(t, p.src.Ready())
	p.show(p.src.Live(context.Background()))
	e := jobapi.Event{Seq: 1, Kind: "model", Turn: 1, Text: "done"}
	p.j.evs = append(p.j.evs, e)
	p.show(p.src.Journal(context.Background()))
	assert.Equal(t, formatEvent(e)+"\n", out.String())
	_, streamed := p.src.Streamed("done")
	assert.False(t, streamed)
}

// firstText is a terminal that notes when the first text arrives.
type firstText struct {
	mu   sync.Mutex
	want string
	buf  strings.Builder
	seen chan struct{}
}

func (f *firstText) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf.Write(b)
	if f.seen != nil && strings.Contains(f.buf.String(), f.want) {
		close(f.seen)
		f.seen = nil
	}
	return len(b), nil
}

// BenchmarkFirstChunkToPrinter is the time from asking the model to its
// first text on the terminal, the endpoint's time to first token being 0:
// the whole path (request, first chunk, go-openai's reader, the activity,
// the hub, the printer) over loopback HTTP. The endpoint streams the rest
// 10 ms apart, so the op is the first chunk's path, not the answer's.
func BenchmarkFirstChunkToPrinter(b *testing.B) {
	reply := demomodel.Reply{Message: openai.ChatCompletionMessage{Content: "First words. Then the rest of the answer."},
		ChunkSize: 12, ChunkDelay: 10 * time.Millisecond}
	srv := demomodel.New(func(openai.ChatCompletionRequest) (demomodel.Reply, error) { return reply, nil })
	base, err := srv.Start("127.0.0.1:0")
	require.NoError(b, err)
	defer srv.Close()
	hub := stream.NewHub(stream.Limits{})
	m := activities.NewModel(base, "k", "m", nil)
	m.Stream = hub
	ws := b.TempDir()
	req := api.ModelRequest{Conversation: &api.Conversation{Workspace: ws, JobID: "j", FirstSeq: 1, Total: 2,
		Append: []openai.ChatCompletionMessage{{Role: "system", Content: "s"}, {Role: "user", Content: "task"}}}}
	term := &firstText{want: "First words."}
	p := newLiveTerm(term, hub)
	defer p.src.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // follow's loop, printing as chunks come
		for {
			select {
			case <-ctx.Done():
				return
			case <-p.src.Ready():
				term.mu.Lock() // the printer's writes and the reset below
				term.mu.Unlock()
				p.show(p.src.Live(ctx))
			}
		}
	}()
	var total time.Duration
	for b.Loop() {
		seen := make(chan struct{})
		term.mu.Lock()
		term.buf.Reset()
		term.seen = seen
		term.mu.Unlock()
		start := time.Now()
		done := make(chan error, 1)
		go func() { _, err := m.Chat(ctx, req); done <- err }()
		select {
		case <-seen:
		case err := <-done:
			b.Fatalf("the answer ended before its text was printed: %v", err)
		}
		total += time.Since(start)
		b.StopTimer()
		require.NoError(b, <-done)
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "us-to-first-text/op")
}

// follow prints the job's events when an answer begins, not at every
// delta: the turn before's results come before the model's next text.
func TestLivePrinterEventsBeforeAnAnswer(t *testing.T) {
	h := stream.NewHub(stream.Limits{})
	var out bytes.Buffer
	events := 0
	journal := func(context.Context, int) ([]jobapi.Event, error) {
		events++
		out.WriteString("[events]\n")
		return nil, nil
	}
	src := jobevents.NewSource(journal, "j", 0, h)
	defer src.Close()
	term := &terminal{out: &out, job: "j"}
	show := func() {
		for _, e := range src.Live(context.Background()) {
			term.render(e)
		}
	}
	w := h.Begin("j", 2, 1)
	for _, s := range []string{"a", "b", "c"} {
		w.Write(s)
		show()
	}
	w.End(true)
	show()
	w = h.Begin("j", 2, 2)
	w.Write("abc")
	show()
	assert.Equal(t, 2, events)
	assert.Equal(t, "[events]\n  model> abc\n[events]\n  model: answer restarted (attempt 2); what follows replaces the text above\n  model> abc", out.String())
}
