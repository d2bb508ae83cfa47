package approval

import (
	"encoding/json"
	"fmt"

	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/protected"
)

// SystemHooks are custos' own layer-4 hooks. They run inside workflow code
// (and in policy check) before any user hook, so they are pure functions of
// the call. The workflow uses them unless its Agent is given others.
func SystemHooks() *hooks.Registry { return systemRegistry }

// systemRegistry is built once: a fixed registration that cannot fail
// unless this file is wrong.
var systemRegistry = func() *hooks.Registry {
	r, err := systemHooks()
	if err != nil {
		panic(err)
	}
	return r
}()

func systemHooks() (*hooks.Registry, error) {
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
// paths the tools would refuse anyway (protected.By: git hooks and
// config, shell start-up files, editor and agent configuration, .custos/): a
// person should not be asked to approve what cannot run. The reason names
// the rule, so the model can tell the user what it could not do.
func denyProtectedWrite(p hooks.Payload) hooks.Result {
	var in struct {
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal(p.Input, &in) != nil || in.FilePath == "" {
		return hooks.Result{}
	}
	rel, ok := WorkspaceRel(in.FilePath, Env{Workspace: p.Workspace})
	if !ok {
		return hooks.Result{}
	}
	if rule, ok := protected.By(rel); ok {
		return hooks.Result{Decision: hooks.Deny, Reason: protected.Reason(in.FilePath, rule)}
	}
	return hooks.Result{}
}
