package protected

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cases are paths (relative to the workspace) in every layout the
// list covers, with the rule that must name them.
var cases = []struct {
	rel  string
	rule Rule
}{
	// git, every layout
	{".git", GitPointer},                // repository dir, or a worktree/submodule pointer file
	{"sub/.git", GitPointer},            // submodule checkout or nested repository
	{".git/hooks", GitHooks},            //
	{".git/hooks/pre-commit", GitHooks}, //
	{".git/config", GitConfig},          //
	{".git/config.worktree", GitConfig}, //
	{".git/modules/sub/hooks/post-checkout", GitHooks},
	{".git/modules/sub/config", GitConfig},
	{".git/modules/a/modules/b/config", GitConfig}, // nested submodule
	{".git/worktrees/wt/config.worktree", GitConfig},
	{".git/worktrees/wt/commondir", GitPointer},
	{".git/worktrees/wt/gitdir", GitPointer},
	{"vendor/lib/.git/hooks/pre-push", GitHooks}, // nested repository
	{"vendor/lib/.git/config", GitConfig},
	{".git/HEAD", GitMetadata},
	{".git/refs/heads/main", GitMetadata},
	{".gitmodules", GitConfigFile},
	{".gitconfig", GitConfigFile},
	// shell start-up files, anywhere
	{".bashrc", ShellStartup}, {".bash_profile", ShellStartup}, {".bash_login", ShellStartup},
	{".bash_logout", ShellStartup}, {".profile", ShellStartup}, {".zshrc", ShellStartup},
	{".zshenv", ShellStartup}, {".zprofile", ShellStartup}, {".zlogin", ShellStartup},
	{".zlogout", ShellStartup}, {"home/user/.bashrc", ShellStartup},
	// editors and agents
	{".vscode/tasks.json", EditorConfig}, {".idea/workspace.xml", EditorConfig},
	{".zed/tasks.json", EditorConfig}, {".devcontainer/devcontainer.json", EditorConfig},
	{"pkg/.vscode/settings.json", EditorConfig},
	{".claude/settings.json", AgentConfig}, {".claude/commands/x.md", AgentConfig},
	{".cursor/mcp.json", AgentConfig}, {".codex/config.toml", AgentConfig}, {".gemini/settings.json", AgentConfig},
	{".mcp.json", MCPServers}, {".claude.json", MCPServers},
	{".ripgreprc", ToolConfig},
	{".custos", Custos}, {".custos/settings.local.json", Custos},
	// spellings
	{"./.git/hooks/x", GitHooks},
	{"src/../.git/config", GitConfig},
	{".GIT/Config", GitConfig},
	{".VSCode/tasks.json", EditorConfig},
	{`.git\hooks\pre-commit`, GitHooks}, // only where \ is a separator
}

func TestBy(t *testing.T) {
	for _, tc := range cases {
		if strings.Contains(tc.rel, `\`) && filepath.Separator != '\\' {
			continue
		}
		t.Run(tc.rel, func(t *testing.T) {
			rule, ok := By(tc.rel)
			require.True(t, ok)
			assert.Equal(t, tc.rule, rule)
		})
	}
	for _, rel := range []string{
		"src/main.go", ".gitignore", ".gitattributes", ".github/workflows/ci.yml", ".git-blame-ignore-revs",
		"gitconfig.go", "bashrc", ".custosrc", "docs/vscode.md", ".", "../.bashrc", "/etc/profile",
	} {
		t.Run("not "+rel, func(t *testing.T) {
			_, ok := By(rel)
			assert.False(t, ok)
		})
	}
}

func TestByWhetherProtected(t *testing.T) {
	tests := []struct {
		rel  string
		want bool
	}{
		{".git/hooks/pre-commit", true},
		{".git/hooks", true},
		{"./.git/hooks/x/y", true},
		{".git/config", true},
		{".git", true},
		{".Git/CONFIG", true},
		{".custos", true},
		{".custos/settings.local.json", true},
		{".git/HEAD", true},       // git metadata: git commands change it, not the file tools
		{".git/config.bak", true}, // config by another name
		{"sub/.git/config", true}, // a nested repository's config runs on the host too
		{".gitignore", false},     // not .git
		{".git-blame-ignore-revs", false},
		{".custosx/a", false},
		{"src/main.go", false},
	}
	for _, tc := range tests {
		t.Run(tc.rel, func(t *testing.T) {
			require.Equal(t, tc.want, isProtected(tc.rel))
		})
	}
}

// TestResolvePathSymlinkRace flips a directory between a real directory and a
// symlink pointing out of the workspace while ResolvePath runs, and checks
// that no answer ever lies outside. Whatever ResolvePath returns is free of
// symlinks as of the moment it looked, so "inside" is checked lexically on
// the answer. (The window after it returns is the caller's to close; see the
// ResolvePath doc comment.)
func isProtected(rel string) bool {
	_, ok := By(rel)
	return ok
}

// The tool descriptions list every protected name.
func TestSummary(t *testing.T) {
	s := Summary()
	for _, l := range [][]Name{Files, Dirs} {
		for _, n := range l {
			assert.Contains(t, s, n.Name)
		}
	}
	for _, n := range []string{".git/", "hooks", "config"} {
		assert.Contains(t, s, n)
	}
	// Write and Edit refuse what a repository's config includes, and
	// Bash sees it read-only (pathguard, protect): the model is told so.
	assert.Contains(t, s, "the files that config includes through [include] and [includeIf]")
	assert.Equal(t, s, Summary(), "fixed bytes")
}
