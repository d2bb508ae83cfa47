package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// protectedCases are paths (relative to the workspace) in every layout the
// list covers, with the rule that must name them. Shared by the path guard
// test below; the system hook test has its own copy of the idea.
var protectedCases = []struct {
	rel  string
	rule ProtectedRule
}{
	// git, every layout
	{".git", RuleGitPointer},                // repository dir, or a worktree/submodule pointer file
	{"sub/.git", RuleGitPointer},            // submodule checkout or nested repository
	{".git/hooks", RuleGitHooks},            //
	{".git/hooks/pre-commit", RuleGitHooks}, //
	{".git/config", RuleGitConfig},          //
	{".git/config.worktree", RuleGitConfig}, //
	{".git/modules/sub/hooks/post-checkout", RuleGitHooks},
	{".git/modules/sub/config", RuleGitConfig},
	{".git/modules/a/modules/b/config", RuleGitConfig}, // nested submodule
	{".git/worktrees/wt/config.worktree", RuleGitConfig},
	{".git/worktrees/wt/commondir", RuleGitPointer},
	{".git/worktrees/wt/gitdir", RuleGitPointer},
	{"vendor/lib/.git/hooks/pre-push", RuleGitHooks}, // nested repository
	{"vendor/lib/.git/config", RuleGitConfig},
	{".git/HEAD", RuleGitMetadata},
	{".git/refs/heads/main", RuleGitMetadata},
	{".gitmodules", RuleGitConfigFile},
	{".gitconfig", RuleGitConfigFile},
	// shell start-up files, anywhere
	{".bashrc", RuleShellStartup}, {".bash_profile", RuleShellStartup}, {".bash_login", RuleShellStartup},
	{".bash_logout", RuleShellStartup}, {".profile", RuleShellStartup}, {".zshrc", RuleShellStartup},
	{".zshenv", RuleShellStartup}, {".zprofile", RuleShellStartup}, {".zlogin", RuleShellStartup},
	{".zlogout", RuleShellStartup}, {"home/user/.bashrc", RuleShellStartup},
	// editors and agents
	{".vscode/tasks.json", RuleEditorConfig}, {".idea/workspace.xml", RuleEditorConfig},
	{".zed/tasks.json", RuleEditorConfig}, {".devcontainer/devcontainer.json", RuleEditorConfig},
	{"pkg/.vscode/settings.json", RuleEditorConfig},
	{".claude/settings.json", RuleAgentConfig}, {".claude/commands/x.md", RuleAgentConfig},
	{".cursor/mcp.json", RuleAgentConfig}, {".codex/config.toml", RuleAgentConfig}, {".gemini/settings.json", RuleAgentConfig},
	{".mcp.json", RuleMCPServers}, {".claude.json", RuleMCPServers},
	{".ripgreprc", RuleToolConfig},
	{".custos", RuleCustos}, {".custos/settings.local.json", RuleCustos},
	// spellings
	{"./.git/hooks/x", RuleGitHooks},
	{"src/../.git/config", RuleGitConfig},
	{".GIT/Config", RuleGitConfig},
	{".VSCode/tasks.json", RuleEditorConfig},
	{`.git\hooks\pre-commit`, RuleGitHooks}, // only where \ is a separator
}

func TestProtectedBy(t *testing.T) {
	for _, tc := range protectedCases {
		if strings.Contains(tc.rel, `\`) && filepath.Separator != '\\' {
			continue
		}
		t.Run(tc.rel, func(t *testing.T) {
			rule, ok := ProtectedBy(tc.rel)
			require.True(t, ok)
			assert.Equal(t, tc.rule, rule)
		})
	}
	for _, rel := range []string{
		"src/main.go", ".gitignore", ".gitattributes", ".github/workflows/ci.yml", ".git-blame-ignore-revs",
		"gitconfig.go", "bashrc", ".custosrc", "docs/vscode.md", ".", "../.bashrc", "/etc/profile",
	} {
		t.Run("not "+rel, func(t *testing.T) {
			_, ok := ProtectedBy(rel)
			assert.False(t, ok)
		})
	}
}

// Every protected path is refused for writing by the path guard with an
// error that is ErrProtectedPath and names the rule; reading stays allowed.
func TestResolvePathNamesProtectedRule(t *testing.T) {
	ws := t.TempDir()
	for _, tc := range protectedCases {
		if strings.Contains(tc.rel, `\`) && filepath.Separator != '\\' {
			continue
		}
		t.Run(tc.rel, func(t *testing.T) {
			_, err := ResolvePath(ws, tc.rel, true)
			require.ErrorIs(t, err, ErrProtectedPath)
			var pe *ProtectedError
			require.True(t, errors.As(err, &pe))
			assert.Equal(t, tc.rule, pe.Rule)
			assert.Contains(t, err.Error(), tc.rule.Name)
			assert.Contains(t, err.Error(), tc.rule.Why)

			_, err = ResolvePath(ws, tc.rel, false)
			assert.NoError(t, err, "protected paths stay readable")
		})
	}
	// Through a symlink: the resolved path is checked too.
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755))
	require.NoError(t, os.Symlink(".vscode", filepath.Join(ws, "editor")))
	_, err := ResolvePath(ws, "editor/tasks.json", true)
	var pe *ProtectedError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, RuleEditorConfig, pe.Rule)
}

// The tool descriptions list every protected name.
func TestProtectedSummary(t *testing.T) {
	s := ProtectedSummary()
	for _, l := range [][]protectedName{protectedFiles, protectedDirs} {
		for _, n := range l {
			assert.Contains(t, s, n.name)
		}
	}
	for _, n := range []string{".git/", "hooks", "config"} {
		assert.Contains(t, s, n)
	}
	assert.Equal(t, s, ProtectedSummary(), "fixed bytes")
}
