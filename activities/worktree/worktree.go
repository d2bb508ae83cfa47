// Package worktree makes the git worktree of a Task call with isolation
// "worktree", on the workspace's host (the TaskWorktree activity).
package worktree

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/sandbox/hostfs"
)

// Maker makes worktrees in the state directory of a worker's settings.
type Maker struct{ Settings *activities.Settings }

// Register registers TaskWorktree where the worker serves its workspaces'
// activities (its main queue, or its host's).
func Register(r activities.Registrar, s *activities.Settings) {
	r.RegisterActivityWithOptions((&Maker{Settings: s}).TaskWorktree, activity.RegisterOptions{Name: api.WorktreeActivity})
}

func (s *Maker) stateDir() (string, error) {
	if s.Settings.StateDir != "" {
		return s.Settings.StateDir, nil
	}
	return statedir.Dir()
}

func (s *Maker) lanes() int {
	if s.Settings.BashLanes > 0 {
		return s.Settings.BashLanes
	}
	return activities.DefaultBashLanes()
}

// TaskWorktree makes the git worktree of a Task call with isolation
// "worktree": `git worktree add -b custos/CHILD` of the workspace's
// repository at its HEAD, in custos' state directory (never in the user's
// working tree). Git records the worktree in the repository's git
// directory (worktrees/NAME, and the branch); nothing else of the
// repository is written. The repository's hooks and fsmonitor do not run.
// A workspace outside any git repository, or one with no commit yet, is a
// refusal (the call's result), not an error. Sent again (the worker died),
// it finds the worktree it made.
func (s *Maker) TaskWorktree(ctx context.Context, req api.WorktreeRequest) (api.WorktreeResult, error) {
	top, err := git(ctx, req.Workspace, "rev-parse", "--show-toplevel")
	if err != nil {
		return api.WorktreeResult{Refused: fmt.Sprintf("Task: isolation \"worktree\" needs a git repository, and the workspace %s is not in one (%v); run it without isolation", req.Workspace, err)}, nil
	}
	commit, err := git(ctx, top, "rev-parse", "--verify", "--end-of-options", "HEAD^{commit}")
	if err != nil {
		return api.WorktreeResult{Refused: fmt.Sprintf("Task: isolation \"worktree\" needs a commit to start from, and the repository %s has none yet (%v); commit first, or run it without isolation", top, err)}, nil
	}
	rel, err := workspaceInRepo(top, req.Workspace)
	if err != nil {
		return api.WorktreeResult{}, err
	}
	state, err := s.stateDir()
	if err != nil {
		return api.WorktreeResult{}, fmt.Errorf("task worktree: %w", err)
	}
	root := filepath.Join(state, "worktrees")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return api.WorktreeResult{}, fmt.Errorf("task worktree: %w", err)
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	if _, in := hostfs.Within(top, root); in {
		return api.WorktreeResult{Refused: fmt.Sprintf("Task: custos' state directory %s is inside the repository %s, and a worktree is never made in the user's working tree; run it without isolation", root, top)}, nil
	}
	name := worktreeName(req.Child)
	path := s.worktreePath(root, name, rel, req.Avoid)
	res := api.WorktreeResult{Path: path, Workspace: filepath.Join(path, rel), Branch: "custos/" + name, Commit: commit}
	res.Lane = api.BashLaneQueue(s.Settings.Host, res.Workspace, s.lanes())
	if got, err := git(ctx, path, "rev-parse", "--show-toplevel"); err == nil && got == path {
		return res, nil // made by an earlier attempt
	}
	if _, err := git(ctx, top, "worktree", "add", "-b", res.Branch, "--end-of-options", path, commit); err != nil {
		return api.WorktreeResult{}, fmt.Errorf("task worktree: %w", err)
	}
	return res, nil
}

// workspaceInRepo is where the workspace is in the repository at top.
func workspaceInRepo(top, ws string) (string, error) {
	real := ws
	if r, err := filepath.EvalSymlinks(ws); err == nil {
		real = r
	}
	rel, in := hostfs.Within(top, real)
	if !in {
		return "", fmt.Errorf("task worktree: the workspace %s is not inside its repository's top %s", ws, top)
	}
	return rel, nil
}

// worktreePath is root/name (root/name-K for the first K whose workspace
// lands on a Bash lane none of avoid's is on, while the lanes allow), so
// the child's commands run beside its parent's and its siblings'.
func (s *Maker) worktreePath(root, name, rel string, avoid []string) string {
	taken := map[string]bool{}
	for _, a := range avoid {
		taken[api.BashLaneQueue(s.Settings.Host, a, s.lanes())] = true
	}
	first := filepath.Join(root, name)
	if len(taken) >= s.lanes() {
		return first
	}
	for k := range 256 {
		p := first
		if k > 0 {
			p = fmt.Sprintf("%s-%d", first, k)
		}
		if !taken[api.BashLaneQueue(s.Settings.Host, filepath.Join(p, rel), s.lanes())] {
			return p
		}
	}
	return first
}

// worktreeName is a child's job ID as a directory and branch name: letters,
// digits, - and _ (anything else a -), at most 100 bytes.
func worktreeName(child string) string {
	b := []byte(child)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	s := strings.TrimLeft(string(b), "-")
	if len(s) > 100 {
		s = s[:100]
	}
	if s == "" {
		s = "task"
	}
	return s
}

// git runs git in dir, on the host, with the repository's hooks and
// fsmonitor off and no GIT_ variable of the worker's, and returns its
// trimmed output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	full := append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-C", dir}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GIT_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", args[0], msg)
	}
	return strings.TrimSpace(out.String()), nil
}
