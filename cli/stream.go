package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/jobevents"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// follow shows a job through one jobevents.Source: the job's journal and
// the model's text as it is written, merged there. The terminal and --json
// render the same events; neither derives events of its own.

// renderer shows a job's events to whoever follows it.
type renderer interface {
	render(e jobevents.Event)
}

// newSource opens the events of job id: the text comes from the worker in
// this process, or is relayed from the worker that runs the model call
// (until ctx ends).
func (a *App) newSource(ctx context.Context, c client.Client, id string, since int) *jobevents.Source {
	hub := a.hub
	if hub == nil && c != nil {
		hub = jobevents.Relay(ctx, c, id)
	}
	return jobevents.NewSource(jobevents.ClientJournal(c, id), id, since, hub)
}

// show renders events.
func (a *App) show(evs []jobevents.Event) {
	for _, e := range evs {
		a.out.render(e)
	}
}

// terminal renders events as lines for a person. What the model and the
// tools wrote is shown through package display, so an escape sequence in
// it is seen, never run by the terminal.
type terminal struct {
	out io.Writer
	job string
	// interactive: calls are prompted for here (else: how to decide).
	interactive bool
	// midLine is true when the text printed last did not end a line.
	midLine bool
}

func (p *terminal) render(e jobevents.Event) {
	switch e := e.(type) {
	case jobevents.Text:
		p.text(e)
	case jobevents.Answer:
		p.endLine()
		if !e.Streamed {
			fmt.Fprintf(p.out, "\n%s\n", display.Safe(e.Text))
		}
	case jobevents.Job, jobevents.Result:
		// Said on stderr by follow.
	default:
		line := formatLine(e)
		if line == "" {
			return
		}
		p.endLine()
		fmt.Fprintln(p.out, line)
		if w, ok := e.(jobevents.Waiting); ok && !p.interactive {
			// No prompt here: say how to decide from elsewhere.
			fmt.Fprintf(p.out, "      decide with: starter approve %s %s   |   starter deny %s %s\n", p.job, shownID(w.Call), p.job, shownID(w.Call))
		}
	}
}

// text prints the model's text as it is written.
func (p *terminal) text(t jobevents.Text) {
	if t.Restart {
		p.endLine()
		fmt.Fprintf(p.out, "  model: answer restarted (attempt %d); what follows replaces the text above\n", t.Attempt)
	}
	if t.Begin {
		p.endLine()
		fmt.Fprint(p.out, "  model> ")
		p.midLine = true
	}
	if t.Text != "" {
		s := display.Safe(t.Text)
		fmt.Fprint(p.out, s)
		p.midLine = !strings.HasSuffix(s, "\n")
	}
	if t.Dropped > 0 {
		fmt.Fprintf(p.out, " [… %d bytes not shown: the terminal fell behind]", t.Dropped)
		p.midLine = true
	}
	if t.End {
		p.endLine()
	}
}

func (p *terminal) endLine() {
	if p.midLine {
		fmt.Fprintln(p.out)
		p.midLine = false
	}
}

// jsonLines renders each event as one line of JSON (jobevents.Marshal).
type jsonLines struct {
	out io.Writer
	// hint (nil: none) is where a waiting call's how-to-answer goes: stderr.
	hint io.Writer
	job  string
}

func (j *jsonLines) render(e jobevents.Event) {
	if w, ok := e.(jobevents.Waiting); ok && j.hint != nil {
		// For a person reading the run's log: how to answer.
		fmt.Fprintf(j.hint, "custos: %s waits for a person: starter approve %s %s | starter deny %s %s\n",
			shownID(w.Call), j.job, shownID(w.Call), j.job, shownID(w.Call))
	}
	b, err := jobevents.Marshal(e)
	if err != nil {
		// Every event type encodes; should one not, the stream says so
		// rather than skipping a line silently.
		b, _ = jobevents.Marshal(jobevents.Error{Text: err.Error()})
	}
	b = append(b, '\n')
	_, _ = j.out.Write(b)
}

// formatEvent is formatLine's line for a step of the journal.
func formatEvent(e jobapi.Event) string { return formatLine(jobevents.FromJournal(e)) }

// formatLine is one line of a job's progress ("" for none).
func formatLine(e jobevents.Event) string {
	switch e := e.(type) {
	case jobevents.Model:
		return modelLine(e)
	case jobevents.ToolCall:
		return fmt.Sprintf("  → %s %s", shownID(e.Call), display.SafeLine(e.Summary))
	case jobevents.Decision:
		return fmt.Sprintf("    %s: %s", shownID(e.Call), display.SafeLine(e.Text))
	case jobevents.Waiting:
		return fmt.Sprintf("    %s: waiting for approval: %s", shownID(e.Call), display.SafeLine(e.Summary))
	case jobevents.ToolResult:
		// A glimpse of the output: its first line, tabs kept (Read numbers
		// its lines with them).
		first, _, _ := strings.Cut(e.Summary, "\n")
		return fmt.Sprintf("    %s ← %s", shownID(e.Call), strings.TrimSpace(display.Safe(first)))
	case jobevents.Park:
		return fmt.Sprintf("  [%s] %s", e.Reason, display.Safe(e.Text))
	case jobevents.Error:
		return fmt.Sprintf("  [error] %s", display.Safe(e.Text))
	case jobevents.Note:
		return fmt.Sprintf("  [%s] %s", e.Kind, display.Safe(e.Text))
	}
	return ""
}

// modelLine is a model turn's line: a turn whose text was streamed keeps
// only what was not (the calls it makes).
func modelLine(e jobevents.Model) string {
	if e.Streamed {
		if rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(e.Text), e.Shown)); rest != "" {
			return fmt.Sprintf("[turn %d] model: (text above) %s", e.Turn, display.SafeLine(rest))
		}
		return fmt.Sprintf("[turn %d] model: final answer (above)", e.Turn)
	}
	text := display.SafeLine(e.Text)
	if !callsSuffix.MatchString(text) {
		// A turn without tool calls is the final answer, printed in
		// full when the job ends.
		return fmt.Sprintf("[turn %d] model: final answer", e.Turn)
	}
	return fmt.Sprintf("[turn %d] model: %s", e.Turn, text)
}
