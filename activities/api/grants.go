package api

import "github.com/custos-dev/custos/approval"

// Activities of the workspace's grants: a grant with scope "workspace" is
// kept on the workspace's host, in custos' state directory, where every job
// of that workspace on that host reads it before it asks a person.
const (
	WorkspaceGrantsActivity   = "WorkspaceGrants"   // the workspace's grants
	AddWorkspaceGrantActivity = "AddWorkspaceGrant" // keep one more
	EndWorkspaceGrantActivity = "EndWorkspaceGrant" // end one (revoked)
)

// WorkspaceGrantsRequest names a workspace and, for Add and End, one grant.
type WorkspaceGrantsRequest struct {
	Workspace string             `json:"workspace"`
	Grant     approval.GrantInfo `json:"grant,omitzero"`
}

// WorkspaceGrantsResult lists the workspace's grants as the file holds
// them (the workflow judges which are live by its own clock); Ended is
// set by End when the grant was there.
type WorkspaceGrantsResult struct {
	Grants []approval.GrantInfo `json:"grants,omitempty"`
	Ended  bool                 `json:"ended,omitempty"`
}
