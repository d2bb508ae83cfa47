package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/internal/statedir"
)

// A workspace's grants live in its directory of custos' state directory
// (statedir.WorkspaceDirIn, owner-only, like the jobs' transcripts), not
// in the workspace: nothing a job's command or tool writes can give
// itself a grant. Jobs of one workspace on one host may run in several
// workers at once: every change holds an exclusive lock on the file's
// lock and replaces the file whole.
const (
	grantsFile = "grants.json"
	grantsLock = "grants.lock"
)

// WorkspaceGrants returns the workspace's grants.
func (s *Settings) WorkspaceGrants(ctx context.Context, req api.WorkspaceGrantsRequest) (api.WorkspaceGrantsResult, error) {
	var res api.WorkspaceGrantsResult
	err := s.withGrants(req.Workspace, false, func(gs []approval.GrantInfo) []approval.GrantInfo {
		res.Grants = gs
		return nil
	})
	return res, err
}

// AddWorkspaceGrant keeps one more grant for the workspace; adding one
// already there (a retried activity) changes nothing.
func (s *Settings) AddWorkspaceGrant(ctx context.Context, req api.WorkspaceGrantsRequest) (api.WorkspaceGrantsResult, error) {
	if req.Grant.ID == "" {
		return api.WorkspaceGrantsResult{}, errors.New("add workspace grant: the grant has no ID")
	}
	err := s.withGrants(req.Workspace, true, func(gs []approval.GrantInfo) []approval.GrantInfo {
		if slices.ContainsFunc(gs, func(g approval.GrantInfo) bool { return g.ID == req.Grant.ID }) {
			return gs
		}
		return append(gs, req.Grant)
	})
	return api.WorkspaceGrantsResult{}, err
}

// EndWorkspaceGrant removes a grant (revoked); Ended says whether it was
// there.
func (s *Settings) EndWorkspaceGrant(ctx context.Context, req api.WorkspaceGrantsRequest) (api.WorkspaceGrantsResult, error) {
	var res api.WorkspaceGrantsResult
	err := s.withGrants(req.Workspace, true, func(gs []approval.GrantInfo) []approval.GrantInfo {
		n := len(gs)
		gs = slices.DeleteFunc(gs, func(g approval.GrantInfo) bool { return g.ID == req.Grant.ID })
		res.Ended = len(gs) < n
		return gs
	})
	return res, err
}

// withGrants reads the workspace's grants under the lock and, when write
// is set, replaces them with what fn returns, dropping those that ended
// over a day ago (kept a while for people reading the file).
func (s *Settings) withGrants(ws string, write bool, fn func([]approval.GrantInfo) []approval.GrantInfo) error {
	if ws == "" {
		return errors.New("workspace grants: no workspace")
	}
	state, err := s.stateDir()
	if err != nil {
		return fmt.Errorf("workspace grants: %w", err)
	}
	dir := statedir.WorkspaceDirIn(state, ws)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("workspace grants: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, grantsLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("workspace grants: %w", err)
	}
	defer lock.Close()
	how := syscall.LOCK_SH
	if write {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(lock.Fd()), how); err != nil {
		return fmt.Errorf("workspace grants: lock: %w", err)
	}
	name := filepath.Join(dir, grantsFile)
	var gs []approval.GrantInfo
	switch b, err := os.ReadFile(name); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("workspace grants: %w", err)
	default:
		if err := json.Unmarshal(b, &gs); err != nil {
			// Fail closed: a broken file grants nothing, and says so.
			return fmt.Errorf("workspace grants: %s is not a list of grants: %w", name, err)
		}
	}
	out := fn(gs)
	if !write {
		return nil
	}
	cut := time.Now().Add(-24 * time.Hour)
	out = slices.DeleteFunc(out, func(g approval.GrantInfo) bool { return g.Until.Before(cut) })
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("workspace grants: %w", err)
	}
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("workspace grants: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("workspace grants: %w", err)
	}
	return nil
}
