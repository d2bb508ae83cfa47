package activities

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/internal/statedir"
)

// The workspace's grants on its host: kept owner-only in the state
// directory, added once however often the activity is retried, ended by
// ID; a broken file grants nothing and says so.
func TestWorkspaceGrantsStore(t *testing.T) {
	state, ws := t.TempDir(), "/home/alice/src/svc"
	s := &Settings{StateDir: state}
	ctx := context.Background()
	g := approval.GrantInfo{ID: "job-a.g1", Rule: "Bash(npm test:*)", Scope: "workspace", By: "alice",
		At: time.Now().UTC(), Until: time.Now().Add(time.Hour).UTC()}
	for range 2 {
		_, err := s.AddWorkspaceGrant(ctx, api.WorkspaceGrantsRequest{Workspace: ws, Grant: g})
		require.NoError(t, err)
	}
	old := g
	old.ID, old.Until = "job-a.g0", time.Now().Add(-48*time.Hour)
	_, err := s.AddWorkspaceGrant(ctx, api.WorkspaceGrantsRequest{Workspace: ws, Grant: old})
	require.NoError(t, err)
	res, err := s.WorkspaceGrants(ctx, api.WorkspaceGrantsRequest{Workspace: ws})
	require.NoError(t, err)
	require.Len(t, res.Grants, 1, "added once; one that ended days ago is dropped")
	assert.Equal(t, g.ID, res.Grants[0].ID)
	assert.True(t, g.Until.Equal(res.Grants[0].Until))

	dir := statedir.WorkspaceDirIn(state, ws)
	fi, err := os.Stat(filepath.Join(dir, "grants.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())

	end, err := s.EndWorkspaceGrant(ctx, api.WorkspaceGrantsRequest{Workspace: ws, Grant: approval.GrantInfo{ID: g.ID}})
	require.NoError(t, err)
	assert.True(t, end.Ended)
	end, err = s.EndWorkspaceGrant(ctx, api.WorkspaceGrantsRequest{Workspace: ws, Grant: approval.GrantInfo{ID: g.ID}})
	require.NoError(t, err)
	assert.False(t, end.Ended, "ended already")
	res, err = s.WorkspaceGrants(ctx, api.WorkspaceGrantsRequest{Workspace: ws})
	require.NoError(t, err)
	assert.Empty(t, res.Grants)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "grants.json"), []byte("{not json"), 0o600))
	_, err = s.WorkspaceGrants(ctx, api.WorkspaceGrantsRequest{Workspace: ws})
	require.ErrorContains(t, err, "is not a list of grants")
	_, err = s.AddWorkspaceGrant(ctx, api.WorkspaceGrantsRequest{Workspace: ws, Grant: approval.GrantInfo{}})
	require.ErrorContains(t, err, "the grant has no ID")
}
