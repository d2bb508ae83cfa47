package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/protected"
	"github.com/custos-dev/custos/sandbox/pathguard"
)

// guardCases are protected paths for the path guard: one for each rule and
// the spellings (the full list is protected's test).
var guardCases = []struct {
	rel  string
	rule protected.Rule
}{
	{".git", protected.GitPointer}, {"sub/.git", protected.GitPointer},
	{".git/hooks/pre-commit", protected.GitHooks}, {".git/config", protected.GitConfig},
	{".git/modules/sub/config", protected.GitConfig}, {".git/worktrees/wt/commondir", protected.GitPointer},
	{".git/HEAD", protected.GitMetadata}, {".gitmodules", protected.GitConfigFile},
	{".bashrc", protected.ShellStartup}, {".vscode/tasks.json", protected.EditorConfig},
	{".claude/settings.json", protected.AgentConfig}, {".mcp.json", protected.MCPServers},
	{".ripgreprc", protected.ToolConfig}, {".custos/settings.local.json", protected.Custos},
	{"./.git/hooks/x", protected.GitHooks}, {"src/../.git/config", protected.GitConfig},
	{".GIT/Config", protected.GitConfig}, {`.git\hooks\pre-commit`, protected.GitHooks},
}

// Every protected path is refused for writing by the path guard with an
// error that is ErrProtectedPath and names the rule; reading stays allowed.
func TestResolvePathNamesProtectedRule(t *testing.T) {
	ws := t.TempDir()
	for _, tc := range guardCases {
		if strings.Contains(tc.rel, `\`) && filepath.Separator != '\\' {
			continue
		}
		t.Run(tc.rel, func(t *testing.T) {
			_, err := pathguard.Resolve(ws, tc.rel, true)
			require.ErrorIs(t, err, pathguard.ErrProtectedPath)
			var pe *pathguard.ProtectedError
			require.True(t, errors.As(err, &pe))
			assert.Equal(t, tc.rule, pe.Rule)
			assert.Contains(t, err.Error(), tc.rule.Name)
			assert.Contains(t, err.Error(), tc.rule.Why)

			_, err = pathguard.Resolve(ws, tc.rel, false)
			assert.NoError(t, err, "protected paths stay readable")
		})
	}
	// Through a symlink: the resolved path is checked too.
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755))
	require.NoError(t, os.Symlink(".vscode", filepath.Join(ws, "editor")))
	_, err := pathguard.Resolve(ws, "editor/tasks.json", true)
	var pe *pathguard.ProtectedError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, protected.EditorConfig, pe.Rule)
}
