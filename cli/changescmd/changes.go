// Package changescmd is starter's commands over a job's checkpoints: what
// each turn changed (changes), the files and the conversation put back as
// they were at a turn (rewind), and a new job from a turn (fork). cli
// dispatches to it with an Env; it never imports cli.
package changescmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/checkpoint"
	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Env is what the commands get from the command line: its streams and its
// ways to the jobs.
type Env struct {
	Stdout, Stderr io.Writer
	// Dial connects to the configured server without starting one.
	Dial func(context.Context) (client.Client, error)
	// Connect connects, or starts the embedded server and a worker in this
	// process (as run does); done ends what it started.
	Connect func(context.Context) (c client.Client, done func(), err error)
	// Status is a job's status query; Forgotten says whether its error
	// means the server no longer has the job.
	Status    func(ctx context.Context, c client.Client, id string) (jobapi.Status, error)
	Forgotten func(error) bool
	// SendRewind sends the job the rewind Update and waits for its result;
	// a refusal comes back in the job's own words.
	SendRewind func(ctx context.Context, c client.Client, id string, r jobapi.Rewind) (jobapi.RewindResult, error)
	// Owner names the person starting a job (CUSTOS_IDENTITY).
	Owner []string
}

// A job's checkpoints are on the host of its workspace, in the state
// directory its worker keeps (api.CheckpointDir of the files its status
// names); for a job the server no longer has, this host's state directory
// is searched, as status reads a forgotten job's files.

// jobCheckpoints is the store of job's checkpoints; c may be nil (no
// server).
func (a *Env) jobCheckpoints(ctx context.Context, c client.Client, job string) (checkpoint.Store, error) {
	if c != nil {
		if st, err := a.Status(ctx, c, job); err == nil && st.Files.Transcript != "" {
			return checkpoint.Store{Dir: api.CheckpointDir(st.Files)}, nil
		}
	}
	dir, err := statedir.Dir()
	if err != nil {
		return checkpoint.Store{}, err
	}
	s, ok := checkpoint.Find(dir, job)
	if !ok {
		return checkpoint.Store{}, fmt.Errorf("no checkpoints of %s on this host (in %s): it changed no file here, or its workspace is on another host", job, dir)
	}
	return s, nil
}

// Changes is `starter changes JOB [--turn N]`: what each turn changed, as
// a diff per file, under the tool call that changed it.
func (a *Env) Changes(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		return cmdline.Usagef("changes: the job (workflow) ID comes first")
	}
	id := args[0]
	fs := cmdline.NewFlagSet("changes", a.Stderr)
	turn := fs.Int("turn", 0, "only this turn (0: every turn)")
	if _, err := cmdline.ParseInterleaved(fs, args[1:]); err != nil {
		return err
	}
	var c client.Client
	if dc, err := a.Dial(ctx); err == nil {
		c = dc
		defer c.Close()
	}
	s, err := a.jobCheckpoints(ctx, c, id)
	if err != nil {
		return err
	}
	recs, err := s.Records(id)
	if err != nil {
		return err
	}
	shown := 0
	for _, r := range recs {
		if *turn != 0 && r.Turn != *turn {
			continue
		}
		shown++
		writeRecord(a.Stdout, s, r)
	}
	if shown == 0 {
		fmt.Fprintf(a.Stdout, "no changes recorded for %s%s\n", id, turnSuffix(*turn))
	}
	return nil
}

func turnSuffix(turn int) string {
	if turn == 0 {
		return ""
	}
	return fmt.Sprintf(" in turn %d", turn)
}

// writeRecord prints one call's changes: a heading naming the turn and
// the call, then a diff or a line per path.
func writeRecord(w io.Writer, s checkpoint.Store, r checkpoint.Record) {
	state := ""
	if !r.Done {
		state = " (not finished: the workspace may hold either side)"
	}
	fmt.Fprintf(w, "turn %d  %s %s  %s%s\n", r.Turn, r.Tool, cmdline.ShownID(r.Call), display.Line(r.What, 100), state)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  cannot be undone: %s\n", display.Line(n, 0))
	}
	for _, c := range r.Changes {
		fmt.Fprint(w, display.Safe(s.Diff(c)))
	}
	fmt.Fprintln(w)
}

// rewindOptions are rewind's flags.
type rewindOptions struct {
	to                               int
	files, conversation, force, wait bool
}

// Rewind is `starter rewind JOB --to TURN`: the files the job changed
// after TURN put back as they were, unless someone changed them since
// (--force), and the conversation cut there.
func (a *Env) Rewind(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		return cmdline.Usagef("rewind: the job (workflow) ID comes first")
	}
	id := args[0]
	fs := cmdline.NewFlagSet("rewind", a.Stderr)
	var o rewindOptions
	fs.IntVar(&o.to, "to", -1, "the turn to go back to (its changes stay)")
	fs.BoolVar(&o.files, "files", false, "only the files")
	fs.BoolVar(&o.conversation, "conversation", false, "only the conversation")
	fs.BoolVar(&o.force, "force", false, "overwrite files someone changed since the job did")
	fs.BoolVar(&o.wait, "wait", false, "wait for the job's running work to end instead of refusing")
	if _, err := cmdline.ParseInterleaved(fs, args[1:]); err != nil {
		return err
	}
	if o.to < 0 {
		return cmdline.Usagef("rewind: --to TURN is needed")
	}
	if !o.files && !o.conversation {
		o.files, o.conversation = true, true
	}
	c, done, err := a.Connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	gone, err := a.untilIdle(ctx, c, id, o.wait)
	if err != nil {
		return err
	}
	if gone && o.conversation {
		return fmt.Errorf("rewind %s: the server no longer has the job; only its files can be rewound (--files)", id)
	}
	files := ""
	if o.files {
		if files, err = a.rewindFiles(ctx, c, id, o); err != nil {
			return err
		}
	}
	if gone {
		return nil
	}
	return a.rewindJob(ctx, c, id, o, files)
}

// rewindJob tells the job of the rewind: it cuts its conversation (when
// asked), audits the rewind and announces it on its channels.
func (a *Env) rewindJob(ctx context.Context, c client.Client, id string, o rewindOptions, files string) error {
	res, err := a.SendRewind(ctx, c, id,
		jobapi.Rewind{To: o.to, Conversation: o.conversation, Files: files, By: app.OSUser(), Channel: "cli"})
	if err != nil {
		return err
	}
	if o.conversation {
		fmt.Fprintf(a.Stdout, "conversation: cut at the end of turn %d (%d messages); the job waits for your next message: starter say %s \"…\"\n",
			res.Turn, res.Messages, id)
	}
	return nil
}

// idle says whether a job in phase does nothing a rewind would race:
// no tool call runs and none will before a person speaks.
func idle(phase string) bool {
	switch phase {
	case jobapi.PhaseWaitingMessage, jobapi.PhaseDone, jobapi.PhaseEnded, "canceled":
		return true
	}
	return false
}

// untilIdle refuses a rewind while the job works (a tool call may be
// changing the files), or with wait, waits until it stops. A job the
// server no longer has (gone) is idle.
func (a *Env) untilIdle(ctx context.Context, c client.Client, id string, wait bool) (gone bool, err error) {
	for {
		st, err := a.Status(ctx, c, id)
		if a.Forgotten(err) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("rewind %s: %w", id, err)
		}
		if idle(st.State) && st.Queued == 0 {
			return false, nil
		}
		if !wait {
			return false, fmt.Errorf("rewind %s: the job is %s; a rewind waits until no tool call runs (starter interrupt %s first, or --wait)", id, st.State, id)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// rewindFiles puts back the files, or lists those someone else changed;
// it returns what it did in a line, for the job's audit.
func (a *Env) rewindFiles(ctx context.Context, c client.Client, id string, o rewindOptions) (string, error) {
	s, err := a.jobCheckpoints(ctx, c, id)
	if err != nil {
		return "", err
	}
	recs, err := s.Records(id)
	if err != nil {
		return "", err
	}
	ws := ""
	for _, r := range recs {
		ws = r.Workspace
	}
	if ws == "" {
		fmt.Fprintf(a.Stdout, "files: %s changed none\n", id)
		return "none changed", nil
	}
	p, err := s.PlanRewind(id, ws, o.to)
	if err != nil {
		return "", err
	}
	if len(p.Conflicts) > 0 && !o.force {
		fmt.Fprintf(a.Stdout, "files changed since %s left them (not overwritten; --force does):\n", id)
		for _, c := range p.Conflicts {
			fmt.Fprintf(a.Stdout, "  %s: the job left %s, it is now %s\n", display.Line(c.Path, 0), kindText(c.Left), kindText(c.Now))
		}
		return "", errors.New("rewind stopped: nothing was changed")
	}
	done, err := s.ApplyRewind(ws, p, o.force)
	if err != nil {
		return "", err
	}
	line := fmt.Sprintf("%d paths put back as they were at turn %d (%d calls undone)", done.Restored, o.to, p.Calls)
	if len(p.Conflicts) > 0 {
		line += fmt.Sprintf(", %d changed by someone else overwritten (--force)", len(p.Conflicts))
	}
	fmt.Fprintf(a.Stdout, "files: %s\n", line)
	for _, f := range done.Failed {
		fmt.Fprintf(a.Stdout, "  not put back: %s\n", display.Line(f, 0))
	}
	for _, n := range p.Notes {
		fmt.Fprintf(a.Stdout, "  cannot be undone: %s\n", display.Line(n, 0))
	}
	writeCommits(a.Stdout, ws, p.Head)
	return line, nil
}

// kindText is an entry in a word or two, for the conflicts list.
func kindText(e checkpoint.Entry) string {
	if e.Kind == checkpoint.File {
		return fmt.Sprintf("a file of %d bytes (sha256 %s)", e.Size, e.Sum[:min(12, len(e.Sum))])
	}
	return e.Kind
}

// writeCommits says which commits were made since head (the HEAD before
// the first call undone): a rewind never rewrites .git, so they stay.
// git is run read-only, without the repository's fsmonitor or pager.
func writeCommits(w io.Writer, ws, head string) {
	if head == "" {
		return
	}
	out, err := exec.Command("git", "-C", ws, "-c", "core.fsmonitor=false", "--no-pager", "log", "--oneline", "--no-decorate", head+"..HEAD").Output()
	if err != nil {
		return
	}
	if text := strings.TrimSpace(string(out)); text != "" {
		fmt.Fprintf(w, "git: these commits were made since then and stay (a rewind never touches .git):\n%s\n", display.Safe(text))
	}
}
