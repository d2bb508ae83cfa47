package cli

import (
	"bytes"
	"context"
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
	"github.com/custos-dev/custos/stream"
	"github.com/custos-dev/custos/workflows"
)

// The terminal shows a streamed answer once: as it comes, then the
// turn's event says only what was not streamed.
func TestLivePrinter(t *testing.T) {
	type step func(h *stream.Hub, p *livePrinter)
	write := func(turn, attempt int, parts ...string) step {
		return func(h *stream.Hub, p *livePrinter) {
			w := h.Begin("j", turn, attempt)
			for _, s := range parts {
				w.Write(s)
				p.print(nil)
			}
			w.End(false)
			p.print(nil)
		}
	}
	fail := func(turn, attempt int, parts ...string) step {
		return func(h *stream.Hub, p *livePrinter) {
			w := h.Begin("j", turn, attempt)
			for _, s := range parts {
				w.Write(s)
			}
			w.End(true)
			p.print(nil)
		}
	}
	unprinted := func(turn, attempt int, text string) step {
		return func(h *stream.Hub, _ *livePrinter) {
			w := h.Begin("j", turn, attempt)
			w.Write(text)
			w.End(false)
		}
	}
	event := func(turn int, text string) step {
		return func(_ *stream.Hub, p *livePrinter) {
			e := workflows.Event{Kind: "model", Turn: turn, Text: text}
			if line := p.eventLine(e, formatEvent(e)); line != "" {
				_, _ = p.out.Write([]byte(line + "\n"))
			}
		}
	}
	final := func(answer string) step {
		return func(_ *stream.Hub, p *livePrinter) {
			if !p.streamedAnswer(answer) {
				_, _ = p.out.Write([]byte("\n" + answer + "\n"))
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
			a := &App{Stdout: &out, hub: h}
			p := a.startLive(context.Background(), "j")
			defer p.close()
			for _, s := range tc.steps {
				s(h, p)
			}
			assert.Equal(t, tc.want, out.String())
			assert.NotContains(t, out.String(), "\x1b")
		})
	}
}

// Without a worker in this process there is nothing to print, and the
// events print as they always did.
func TestLivePrinterOff(t *testing.T) {
	a := &App{}
	p := a.startLive(context.Background(), "j")
	require.Nil(t, p)
	p.print(nil)
	p.close()
	e := workflows.Event{Kind: "model", Turn: 1, Text: "done"}
	assert.Equal(t, formatEvent(e), p.eventLine(e, formatEvent(e)))
	assert.False(t, p.streamedAnswer("done"))
	assert.Nil(t, p.ready())
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
	p := (&App{Stdout: term, hub: hub}).startLive(context.Background(), "j")
	defer p.close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // follow's loop, printing as chunks come
		for {
			select {
			case <-ctx.Done():
				return
			case <-p.ready():
				term.mu.Lock() // the printer's writes and the reset below
				term.mu.Unlock()
				p.print(nil)
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
	p := (&App{Stdout: &out, hub: h}).startLive(context.Background(), "j")
	defer p.close()
	events := 0
	before := func() { events++; out.WriteString("[events]\n") }
	w := h.Begin("j", 2, 1)
	for _, s := range []string{"a", "b", "c"} {
		w.Write(s)
		p.print(before)
	}
	w.End(true)
	p.print(before)
	w = h.Begin("j", 2, 2)
	w.Write("abc")
	p.print(before)
	assert.Equal(t, 2, events)
	assert.Equal(t, "[events]\n  model> abc\n[events]\n  model: answer restarted (attempt 2); what follows replaces the text above\n  model> abc", out.String())
}
