package cli

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/jobevents"
	"github.com/custos-dev/custos/jobstart"
	"github.com/custos-dev/custos/sandbox/pathguard"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// A job is a conversation: after its answer it waits for the next message.
// `starter run` on a terminal asks for it after each answer; `starter say`
// sends one from anywhere; `starter interrupt` stops what the job runs now;
// `starter end` ends it.

// say sends a message to a job and, unless --detach, follows it to its
// answer. With no server reachable it starts the embedded one and a worker,
// as follow does, so a job paused when its `starter run` stopped goes on.
func (a *App) say(ctx context.Context, args []string) error {
	fs := newFlagSet("say", a.Stderr)
	detach := fs.Bool("detach", false, "send the message and return")
	by := fs.String("by", app.OSUser(), "who speaks (recorded in the audit, with the channel cli)")
	workspace := fs.String("workspace", ".", "the job's workspace, for a job the server no longer remembers (past its retention)")
	jsonOut := jsonFlag(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	a.useJSON(*jsonOut)
	if len(pos) < 2 || pos[0] == "" {
		return usagef(`say: starter say JOB "text"`)
	}
	id, text := pos[0], strings.Join(pos[1:], " ")
	if strings.TrimSpace(text) == "" {
		return usagef("say: the message has no text")
	}
	s, err := a.connectOrEmbed(ctx, defaultModelOptions())
	if err != nil {
		return err
	}
	defer s.Close()
	a.inProcess = s.workers != nil
	running, in, err := jobstart.LastInput(ctx, s.client, id)
	if err != nil {
		return err
	}
	if running {
		res, err := sendMessage(ctx, s.client, id, jobapi.Message{Text: text, By: *by, Channel: "cli"})
		if err != nil {
			return err
		}
		fmt.Fprintf(a.Stderr, "custos: %s\n", deliveryText(id, res))
	} else if err := a.resumeJob(ctx, s.client, id, text, in, *workspace); err != nil {
		return err
	}
	if *detach {
		return nil
	}
	return a.follow(ctx, s.client, id, 0)
}

// resumeJob continues an ended job under its own name, as a new run that
// reads the conversation from the job's transcript: the text is its next
// message. It starts from the ended run's input (workspace, host, mode,
// limits), or, when the server no longer has it, from the workspace given.
func (a *App) resumeJob(ctx context.Context, c client.Client, id, text string, last *jobapi.JobInput, workspace string) error {
	var fresh jobapi.JobInput
	if last == nil {
		ws, err := pathguard.CanonicalWorkspace(workspace)
		if err != nil {
			return err
		}
		fresh = jobapi.JobInput{Workspace: ws, Owner: identities(os.Getenv(EnvIdentity))}
	}
	in := jobstart.ResumeInput(last, fresh, text)
	if err := jobstart.Resume(ctx, c, id, in, jobstart.Options{}); err != nil {
		return err
	}
	fmt.Fprintf(a.Stderr, "custos: job %s had ended; it goes on in %s from its transcript, with your message\n", id, display.Line(in.Workspace, 0))
	return nil
}

// defaultModelOptions are the worker's model settings from the
// environment, for commands that may start one in process.
func defaultModelOptions() app.Options {
	return app.Options{BaseURL: os.Getenv("OPENAI_BASE_URL"), APIKey: os.Getenv("OPENAI_API_KEY"),
		Model: cmp.Or(os.Getenv("OPENAI_MODEL"), app.DefaultModel)}
}

// sendMessage sends one message through the message Update. Its ID is the
// Update's: a retry of this very send counts once.
func sendMessage(ctx context.Context, c client.Client, id string, m jobapi.Message) (jobapi.MessageResult, error) {
	if m.ID == "" {
		m.ID = newMessageID()
	}
	res, err := updateWithID[jobapi.MessageResult](ctx, c, id, jobapi.MessageUpdate, m.ID, m)
	if err != nil && !errors.Is(err, errNotApplied) {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return res, fmt.Errorf("no running job %s to send the message to: %w", id, err)
		}
		err = fmt.Errorf("send the message to %s: %w", id, err)
	}
	return res, err
}

func newMessageID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "msg-" + hex.EncodeToString(b)
}

// deliveryText says what became of a message.
func deliveryText(id string, r jobapi.MessageResult) string {
	switch r.Delivery {
	case "next":
		return fmt.Sprintf("message %d sent to %s; the model answers it now", r.Seq, id)
	case "duplicate":
		return fmt.Sprintf("%s already had this message (id %s); it counts once", id, display.Line(r.ID, maxID))
	}
	return fmt.Sprintf("message %d queued in %s (%d waiting): the model gets it with its next call, after the running tools' results", r.Seq, id, r.Queued)
}

// interrupt stops what a job runs now and, with text, gives the model that
// text at once.
func (a *App) interrupt(ctx context.Context, c client.Client, id string, args []string) error {
	fs := newFlagSet("interrupt", a.Stderr)
	by := fs.String("by", app.OSUser(), "who interrupts (recorded in the audit)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	in := jobapi.Interrupt{Text: strings.Join(pos, " "), By: *by, Channel: "cli"}
	if strings.TrimSpace(in.Text) != "" {
		in.ID = newMessageID()
	}
	res, err := updateWithID[jobapi.InterruptResult](ctx, c, id, jobapi.InterruptUpdate, cmp.Or(in.ID, newMessageID()), in)
	if err != nil {
		if !errors.Is(err, errNotApplied) {
			err = fmt.Errorf("interrupt %s: %w", id, err)
		}
		return err
	}
	fmt.Fprintln(a.Stdout, interruptText(id, res))
	return nil
}

func interruptText(id string, r jobapi.InterruptResult) string {
	var b strings.Builder
	if len(r.Stopped) == 0 {
		fmt.Fprintf(&b, "%s was not working: nothing to stop", id)
	} else {
		fmt.Fprintf(&b, "%s: stopped %s", id, display.Line(strings.Join(r.Stopped, ", "), maxReason))
	}
	if len(r.Denied) > 0 {
		fmt.Fprintf(&b, "; denied as interrupted: %s", display.Line(strings.Join(r.Denied, ", "), maxReason))
	}
	if r.Message != nil {
		fmt.Fprintf(&b, "; the model gets your text now (message %d)", r.Message.Seq)
	}
	return b.String()
}

// end ends a job and waits for it to complete.
func (a *App) end(ctx context.Context, args []string) error {
	fs := newFlagSet("end", a.Stderr)
	by := fs.String("by", app.OSUser(), "who ends the job (recorded in the audit)")
	reason := fs.String("reason", "", "why (recorded in the audit)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] == "" {
		return usagef("end: starter end JOB")
	}
	id := pos[0]
	s, err := a.connectOrEmbed(ctx, defaultModelOptions())
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := sendEnd(ctx, s.client, id, jobapi.End{By: *by, Channel: "cli", Reason: *reason})
	if err != nil {
		if !errors.Is(err, errNotApplied) {
			err = fmt.Errorf("end %s: %w", id, err)
		}
		return err
	}
	// The job saves its transcript before it completes: wait for that, so
	// an in-process worker does not stop half-way.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var out jobapi.JobResult
	if err := s.client.GetWorkflow(wctx, id, "").Get(wctx, &out); err != nil {
		return fmt.Errorf("end %s: the job was asked to end but has not completed yet: %w", id, err)
	}
	fmt.Fprintf(a.Stdout, "%s ended after %d turns\n", id, res.Turns)
	return nil
}

// updateWithID is update with the Update's ID given, so that the server
// counts a repeated send once.
func updateWithID[T any](ctx context.Context, c client.Client, id, name, updateID string, arg any) (T, error) {
	var res T
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateID: updateID, UpdateName: name, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if msg, ok := jobRefusal(err); ok {
		return res, notApplied{msg}
	}
	return res, err
}

// waitsForMessage says whether a job has answered and waits for a person.
func waitsForMessage(st jobapi.Status) bool {
	return st.State == jobapi.PhaseWaitingMessage && st.Queued == 0
}

// converse is what follow does once the job has answered: print the answer
// and, on a terminal, ask for the next message. It reports whether follow
// should go on (a message was sent).
func (a *App) converse(ctx context.Context, c client.Client, id string, st jobapi.Status, lines <-chan string) (bool, error) {
	a.show(a.src.NewAnswer(st.LastAnswer, st.Turn))
	fmt.Fprintf(a.Stderr, "custos: answered after %d turns (%d tokens)\n", st.Turn, st.Usage.TotalTokens)
	if lines == nil {
		a.leftWaiting(id)
		res := jobevents.Answered(id, st)
		a.out.render(res)
		return false, exitFor(res)
	}
	for {
		fmt.Fprint(a.Stdout, "> ")
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-ctx.Done():
			fmt.Fprintln(a.Stdout)
			a.stopped(id)
			return false, nil
		}
		text := strings.TrimSpace(line)
		if !ok || text == "" {
			if !ok {
				fmt.Fprintln(a.Stdout)
			}
			a.leftWaiting(id)
			return false, nil
		}
		if text == "/end" {
			_, err := sendEnd(ctx, c, id, jobapi.End{By: app.OSUser(), Channel: "terminal"})
			return err == nil, err
		}
		_, err := sendMessage(ctx, c, id, jobapi.Message{Text: line, By: app.OSUser(), Channel: "terminal"})
		if errors.Is(err, errNotApplied) {
			fmt.Fprintf(a.Stdout, "    %s\n", display.SafeLine(err.Error()))
			continue
		}
		return err == nil, err
	}
}

// leftWaiting says how to come back to a job that waits for a message.
func (a *App) leftWaiting(id string) {
	how := fmt.Sprintf(`starter say %s "…" (or starter follow %s); starter end %s ends it`, id, id, id)
	if a.inProcess {
		fmt.Fprintf(a.Stderr, "custos: job %s is saved and waits for your next message; the server stops with this command, and starts again with: %s\n", id, how)
		return
	}
	fmt.Fprintf(a.Stderr, "custos: job %s waits for your next message: %s\n", id, how)
}

// steer sends a line typed while the job works as a message: it reaches
// the model after the running tools' results.
func (a *App) steer(ctx context.Context, c client.Client, id, line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	res, err := sendMessage(ctx, c, id, jobapi.Message{Text: line, By: app.OSUser(), Channel: "terminal"})
	if err != nil {
		fmt.Fprintf(a.Stdout, "    message not sent: %s\n", display.SafeLine(err.Error()))
		return
	}
	fmt.Fprintf(a.Stdout, "    (%s)\n", deliveryText(id, res))
}
