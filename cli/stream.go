package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/stream"
	"github.com/custos-dev/custos/workflows"
)

// livePrinter prints a job's model answers as they are written, from the
// stream hub of the worker in this process, and keeps the terminal from
// showing them twice: the workflow's "model" event for a turn it streamed
// prints only what was not streamed (the calls), and the final answer is
// not printed again at the end. Everything goes through package display.
// Only follow's goroutine uses it, so the lines it prints never interleave
// with the events'.
type livePrinter struct {
	out io.Writer
	sub *stream.Subscription
	// queue is what was taken from sub and not printed yet.
	queue []stream.Chunk
	// open is the answer being printed (turn/attempt), "" between answers;
	// midLine is true when its text did not end with a line feed.
	open    string
	midLine bool
	text    strings.Builder // the open answer's text
	partial bool            // some of it was dropped
	// shown are answers printed in full, by their text, until the event
	// of their turn (or the job's result) claims them.
	shown []string
}

// startLive subscribes to id's answers when a worker runs in this process
// with streaming on, or relays them from the inbox of this machine's
// embedded server; nil otherwise (a nil livePrinter prints nothing).
func (a *App) startLive(ctx context.Context, id string) *livePrinter {
	hub := a.hub
	if hub == nil {
		// A worker in another process of this machine: its inbox relays,
		// until ctx ends.
		hub = remoteHub(ctx, remoteStreamDir(), id)
	}
	if hub == nil {
		return nil
	}
	return &livePrinter{out: a.Stdout, sub: hub.Subscribe(id)}
}

// ready has a value when chunks wait (never, for nil).
func (p *livePrinter) ready() <-chan struct{} {
	if p == nil {
		return nil
	}
	return p.sub.Ready()
}

func (p *livePrinter) close() {
	if p != nil {
		p.sub.Close()
	}
}

// print prints the chunks waiting. before (nil: none) is called first
// when they begin an answer: follow prints the job's events there, so the
// tool results of the turn before come before the model's next text.
func (p *livePrinter) print(before func()) {
	if p == nil {
		return
	}
	p.queue = append(p.queue, p.sub.Take()...)
	if before != nil && len(p.queue) > 0 {
		c := p.queue[0]
		if c.Restart || p.open != fmt.Sprintf("%d/%d", c.Turn, c.Attempt) {
			before() // may print the queue itself: see eventLine
		}
	}
	p.drain()
}

// drainAnswer prints the queued chunks up to the end of the first answer
// that ended well.
func (p *livePrinter) drainAnswer() {
	for len(p.queue) > 0 {
		c := p.queue[0]
		p.queue = p.queue[1:]
		p.chunk(c)
		if c.Done && !c.Failed {
			return
		}
	}
}

// drain prints the queued chunks, in order.
func (p *livePrinter) drain() {
	for len(p.queue) > 0 {
		c := p.queue[0]
		p.queue = p.queue[1:]
		p.chunk(c)
	}
	p.queue = nil
}

func (p *livePrinter) chunk(c stream.Chunk) {
	key := fmt.Sprintf("%d/%d", c.Turn, c.Attempt)
	switch {
	case c.Restart:
		p.endLine()
		fmt.Fprintf(p.out, "  model: answer restarted (attempt %d); what follows replaces the text above\n", c.Attempt)
		p.begin(key)
	case p.open != key || c.Snapshot:
		p.endLine()
		p.begin(key)
	}
	if c.Text != "" {
		p.text.WriteString(c.Text)
		s := display.Safe(c.Text)
		fmt.Fprint(p.out, s)
		p.midLine = !strings.HasSuffix(s, "\n")
	}
	if c.Dropped > 0 {
		fmt.Fprintf(p.out, " [… %d bytes not shown: the terminal fell behind]", c.Dropped)
		p.midLine = true
		p.partial = true // not shown in full: its event prints it
	}
	if c.Done {
		p.endLine()
		if t := strings.TrimSpace(p.text.String()); !c.Failed && !p.partial && t != "" {
			p.shown = append(p.shown, t)
			if n := len(p.shown) - maxShown; n > 0 {
				p.shown = p.shown[n:]
			}
		}
		p.open = ""
	}
}

// maxShown bounds the answers remembered for their events.
const maxShown = 8

func (p *livePrinter) begin(key string) {
	p.open, p.partial = key, false
	p.text.Reset()
	fmt.Fprint(p.out, "  model> ")
	p.midLine = true
}

func (p *livePrinter) endLine() {
	if p.midLine {
		fmt.Fprintln(p.out)
		p.midLine = false
	}
}

// eventLine is the line to print for e, formatEvent's line given: a
// "model" event whose text was streamed keeps only what was not (the
// calls it makes).
func (p *livePrinter) eventLine(e workflows.Event, line string) string {
	if p == nil || line == "" {
		return line
	}
	if e.Kind != "model" {
		p.endLine()
		return line
	}
	text := strings.TrimSpace(e.Text)
	if l, ok := p.claim(e.Turn, text); ok {
		return l
	}
	// The answer's text is published before the activity returns, so
	// if it was not printed yet it waits here: print it (and not the
	// answers after it) before its event.
	p.queue = append(p.queue, p.sub.Take()...)
	p.drainAnswer()
	p.endLine()
	if l, ok := p.claim(e.Turn, text); ok {
		return l
	}
	return line
}

// claim finds the streamed answer a model event's text begins with and
// says what of the event is left to print.
func (p *livePrinter) claim(turn int, text string) (string, bool) {
	for i, s := range p.shown {
		rest, ok := strings.CutPrefix(text, s)
		if !ok {
			continue
		}
		p.shown = append(p.shown[:i], p.shown[i+1:]...)
		if rest = strings.TrimSpace(rest); rest != "" {
			return fmt.Sprintf("[turn %d] model: (text above) %s", turn, display.SafeLine(rest)), true
		}
		// The final answer: it was printed as it came; the job's result
		// (streamedAnswer) claims it again.
		p.shown = append(p.shown, s)
		return fmt.Sprintf("[turn %d] model: final answer (above)", turn), true
	}
	return "", false
}

// printAnswer prints a job's answer unless it was printed as it was
// written.
func (a *App) printAnswer(answer string) {
	if !a.live.streamedAnswer(answer) {
		fmt.Fprintf(a.Stdout, "\n%s\n", display.Safe(answer))
	}
}

// streamedAnswer reports whether the job's final answer was printed as it
// was written, so follow does not print it again.
func (p *livePrinter) streamedAnswer(answer string) bool {
	if p == nil {
		return false
	}
	p.print(nil)
	p.endLine()
	answer = strings.TrimSpace(answer)
	for _, s := range p.shown {
		if s == answer {
			return true
		}
	}
	return false
}
