package changescmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/jobstart"
	"github.com/custos-dev/custos/sandbox/pathguard"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// forkOptions are fork's flags and its message.
type forkOptions struct {
	at                 int
	worktree, id, text string
}

// Fork is `starter fork JOB --at TURN [--worktree DIR] "message"`: a new
// job with JOB's conversation up to the end of TURN and the message as its
// next, in the same workspace or in a new git worktree holding the files
// as they were at TURN.
func (a *Env) Fork(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		return cmdline.Usagef("fork: the job (workflow) ID comes first")
	}
	src := args[0]
	fs := cmdline.NewFlagSet("fork", a.Stderr)
	var o forkOptions
	fs.IntVar(&o.at, "at", -1, "the turn whose end the new job starts from")
	fs.StringVar(&o.worktree, "worktree", "", "a new git worktree for the new job, with the files as they were at the turn")
	fs.StringVar(&o.id, "id", "", "the new job's ID (default: JOB-fork-…)")
	pos, err := cmdline.ParseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	if o.text = strings.TrimSpace(strings.Join(pos, " ")); o.at < 0 || o.text == "" {
		return cmdline.Usagef("fork: starter fork JOB --at TURN [--worktree DIR] \"the new job's message\"")
	}
	if o.id == "" {
		var b [3]byte
		_, _ = rand.Read(b[:])
		o.id = fmt.Sprintf("%s-fork-t%d-%s", src, o.at, hex.EncodeToString(b[:]))
	}
	c, done, err := a.Connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	st, err := a.Status(ctx, c, src)
	if err != nil {
		return fmt.Errorf("fork %s: %w", src, err)
	}
	return a.startFork(ctx, c, st, o)
}

// startFork writes the new job's transcript (JOB's, cut at the turn),
// makes its worktree when asked, and starts it.
func (a *Env) startFork(ctx context.Context, c client.Client, st jobapi.Status, o forkOptions) error {
	after, err := forkCut(st, o.at)
	if err != nil {
		return err
	}
	target := st.Workspace
	if o.worktree != "" {
		if target, err = a.forkWorktree(ctx, c, st, o); err != nil {
			return err
		}
	}
	// The new job's files are where its worker will look: the same state
	// directory as the job forked (<state>/workspaces/<ws>/sessions/…).
	state := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(st.Files.Transcript))))
	files := api.JobFilesIn(statedir.WorkspaceDirIn(state, target), o.id)
	cut, err := activities.CopyTranscriptCut(st.Files.Transcript, files.Transcript, after)
	if err != nil {
		return fmt.Errorf("fork %s: %w", st.JobID, err)
	}
	in := jobapi.JobInput{Workspace: target, Host: st.Host, Mode: st.Mode, Owner: a.Owner,
		Task: o.text, Resume: true, ForkOf: &jobapi.ForkOf{Job: st.JobID, Turn: o.at}}
	if _, err := jobstart.Start(ctx, c, o.id, in, jobstart.Options{}); err != nil {
		return fmt.Errorf("fork %s: start %s: %w", st.JobID, o.id, err)
	}
	fmt.Fprintf(a.Stdout, "forked %s at turn %d (%d messages) as %s in %s\nfollow it: starter follow %s\n",
		display.Line(st.JobID, cmdline.MaxID), o.at, cut.Total, display.Line(o.id, cmdline.MaxID), display.Line(target, 0), display.Line(o.id, cmdline.MaxID))
	return nil
}

// forkCut is the transcript seq of turn at's answer (2 for turn 0: the
// system prompt and the task).
func forkCut(st jobapi.Status, at int) (int, error) {
	if at > st.Turn {
		return 0, fmt.Errorf("fork %s: it has had %d turns", st.JobID, st.Turn)
	}
	if at == 0 {
		return 2, nil
	}
	seq := 0
	for _, t := range st.Turns {
		if t.Turn <= at {
			seq = t.Seq
		}
	}
	if seq == 0 {
		return 0, fmt.Errorf("fork %s: turn %d is older than what the job knows of its turns", st.JobID, at)
	}
	return seq, nil
}

// forkWorktree makes o.worktree a new git worktree of the job's
// workspace, at the commit HEAD named when the first call after the turn
// began (else HEAD now), and puts the files the job changed as they were
// at the turn. Only git writes the workspace's .git, as `git worktree add`
// does for a person.
func (a *Env) forkWorktree(ctx context.Context, c client.Client, st jobapi.Status, o forkOptions) (string, error) {
	store, err := a.jobCheckpoints(ctx, c, st.JobID)
	if err != nil && o.at < st.Turn {
		return "", err
	}
	head := "HEAD"
	if recs, _ := store.Records(st.JobID); len(recs) > 0 {
		for _, r := range recs {
			if r.Turn > o.at && r.Head != "" {
				head = r.Head
				break
			}
		}
	}
	dir, err := filepath.Abs(o.worktree)
	if err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, "git", "-C", st.Workspace, "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
		"worktree", "add", "--detach", dir, head).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("fork: git worktree add %s: %v: %s", dir, err, display.Line(string(out), 0))
	}
	ws, err := pathguard.CanonicalWorkspace(dir)
	if err != nil {
		return "", err
	}
	if store.Dir != "" {
		done, err := store.PutAt(ws, st.JobID, o.at)
		if err != nil {
			return "", err
		}
		if len(done.Failed) > 0 {
			return "", errors.New("fork: not put in the worktree: " + strings.Join(done.Failed, "; "))
		}
	}
	return ws, nil
}
