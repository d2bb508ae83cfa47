package workers

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

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
	if rel, ok := lexicalRel(p.Workspace, in.FilePath); ok && sandbox.ProtectedPath(rel) {
		return hooks.Result{Decision: "deny", Reason: fmt.Sprintf("%s is protected: .git/hooks, .git/config and .custos/ are read-only for tools", in.FilePath)}
	}
	return hooks.Result{}
}

// lexicalRel makes p relative to the workspace without touching the disk
// (this runs in workflow code); the tools' path guard does the real check.
func lexicalRel(workspace, p string) (string, bool) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(workspace, p)
	}
	rel, err := filepath.Rel(workspace, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}
