package app

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/sandbox"
)

func TestDenyProtectedWrite(t *testing.T) {
	reg, err := DefaultHooks()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool, path string
		deny       bool
	}{
		{"Write", ".custos/settings.json", true},
		{"Edit", ".git/hooks/pre-commit", true},
		{"Write", "/ws/.git/config", true},
		{"Write", "src/../.custos/x", true},
		{"Write", "src/main.go", false},
		{"Write", "/elsewhere/.custos/x", false}, // outside: the path guard refuses it
		{"Read", ".custos/settings.json", false}, // reading is not writing
	} {
		in, _ := json.Marshal(map[string]string{"file_path": tc.path})
		p := hooks.Payload{Point: hooks.ToolApprovalPre, Tool: tc.tool, Input: in, Workspace: "/ws"}
		r, ok := hooks.Dispatch(reg.Handlers(hooks.ToolApprovalPre, tc.tool), p)
		if got := ok && r.Decision == "deny"; got != tc.deny {
			t.Errorf("%s %s: denied = %v, want %v (%+v)", tc.tool, tc.path, got, tc.deny, r)
		}
	}
}

// Each protected path, in every layout and spelling, is refused by the system
// hook with a reason that names the path and the rule; its neighbours are not.
func TestDenyProtectedWriteNamesRule(t *testing.T) {
	reg, err := DefaultHooks()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		rule sandbox.ProtectedRule
	}{
		{".git/hooks/pre-commit", sandbox.RuleGitHooks},
		{"/ws/.git/config", sandbox.RuleGitConfig},
		{".git", sandbox.RuleGitPointer},
		{"sub/.git", sandbox.RuleGitPointer},
		{".git/modules/sub/hooks/post-checkout", sandbox.RuleGitHooks},
		{".git/modules/sub/config", sandbox.RuleGitConfig},
		{".git/worktrees/wt/config.worktree", sandbox.RuleGitConfig},
		{".git/worktrees/wt/commondir", sandbox.RuleGitPointer},
		{"vendor/lib/.git/config", sandbox.RuleGitConfig},
		{".gitmodules", sandbox.RuleGitConfigFile},
		{".gitconfig", sandbox.RuleGitConfigFile},
		{".bashrc", sandbox.RuleShellStartup},
		{"./.zshrc", sandbox.RuleShellStartup},
		{".profile", sandbox.RuleShellStartup},
		{".vscode/tasks.json", sandbox.RuleEditorConfig},
		{".idea/workspace.xml", sandbox.RuleEditorConfig},
		{".claude/settings.json", sandbox.RuleAgentConfig},
		{".mcp.json", sandbox.RuleMCPServers},
		{"src/../.custos/settings.json", sandbox.RuleCustos},
		{".GIT/HOOKS/x", sandbox.RuleGitHooks},
	} {
		for _, tool := range []string{"Write", "Edit"} {
			in, _ := json.Marshal(map[string]string{"file_path": tc.path})
			p := hooks.Payload{Point: hooks.ToolApprovalPre, Tool: tool, Input: in, Workspace: "/ws"}
			r, ok := hooks.Dispatch(reg.Handlers(hooks.ToolApprovalPre, tool), p)
			if !ok || r.Decision != "deny" {
				t.Errorf("%s %s: not denied (%+v)", tool, tc.path, r)
				continue
			}
			for _, want := range []string{tc.path, tc.rule.Name, tc.rule.Why} {
				if !strings.Contains(r.Reason, want) {
					t.Errorf("%s %s: reason %q does not contain %q", tool, tc.path, r.Reason, want)
				}
			}
		}
	}
	for _, path := range []string{".gitignore", ".github/workflows/ci.yml", "src/bashrc.go", "docs/.vscode.md"} {
		in, _ := json.Marshal(map[string]string{"file_path": path})
		p := hooks.Payload{Point: hooks.ToolApprovalPre, Tool: "Write", Input: in, Workspace: "/ws"}
		if r, ok := hooks.Dispatch(reg.Handlers(hooks.ToolApprovalPre, "Write"), p); ok && r.Decision == "deny" {
			t.Errorf("Write %s: denied, want no decision (%+v)", path, r)
		}
	}
}
