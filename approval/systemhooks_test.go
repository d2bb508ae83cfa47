package approval

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/protected"
)

func TestDenyProtectedWrite(t *testing.T) {
	reg := SystemHooks()
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
	reg := SystemHooks()
	for _, tc := range []struct {
		path string
		rule protected.Rule
	}{
		{".git/hooks/pre-commit", protected.GitHooks},
		{"/ws/.git/config", protected.GitConfig},
		{".git", protected.GitPointer},
		{"sub/.git", protected.GitPointer},
		{".git/modules/sub/hooks/post-checkout", protected.GitHooks},
		{".git/modules/sub/config", protected.GitConfig},
		{".git/worktrees/wt/config.worktree", protected.GitConfig},
		{".git/worktrees/wt/commondir", protected.GitPointer},
		{"vendor/lib/.git/config", protected.GitConfig},
		{".gitmodules", protected.GitConfigFile},
		{".gitconfig", protected.GitConfigFile},
		{".bashrc", protected.ShellStartup},
		{"./.zshrc", protected.ShellStartup},
		{".profile", protected.ShellStartup},
		{".vscode/tasks.json", protected.EditorConfig},
		{".idea/workspace.xml", protected.EditorConfig},
		{".claude/settings.json", protected.AgentConfig},
		{".mcp.json", protected.MCPServers},
		{"src/../.custos/settings.json", protected.Custos},
		{".GIT/HOOKS/x", protected.GitHooks},
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
