package workers

import (
	"encoding/json"
	"fmt"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/sandbox"
)

// DefaultHooks are custos' system hooks. They run inside workflow code before
// any user hook, so they are pure functions of the call.
func DefaultHooks() (*hooks.Registry, error) {
	r := hooks.NewRegistry()
	err := r.Register(hooks.Handler{
		Name:     "system:protected-paths",
		Point:    hooks.ToolApprovalPre,
		Priority: -100,
		Source:   "system",
		Matcher:  "Write|Edit",
		Decide:   denyProtectedWrite,
	})
	if err != nil {
		return nil, fmt.Errorf("register system hooks: %w", err)
	}
	return r, nil
}

// denyProtectedWrite refuses, before anyone is asked, a Write or Edit of the
// paths the tools would refuse anyway (.git/hooks, .git/config, .custos/): a
// person should not be asked to approve what cannot run.
func denyProtectedWrite(p hooks.Payload) hooks.Result {
	var in struct {
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal(p.Input, &in) != nil || in.FilePath == "" {
		return hooks.Result{}
	}
	if rel, ok := approval.WorkspaceRel(in.FilePath, approval.Env{Workspace: p.Workspace}); ok && sandbox.ProtectedPath(rel) {
		return hooks.Result{Decision: "deny", Reason: fmt.Sprintf("%s is protected: .git/hooks, .git/config and .custos/ are read-only for tools", in.FilePath)}
	}
	return hooks.Result{}
}
