package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/custos-dev/custos/sandbox/gitdir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/protected"
)

func TestGitCoreValues(t *testing.T) {
	tests := []struct {
		name, config, hooksPath, worktree string
	}{
		{"husky", "[core]\n\trepositoryformatversion = 0\n\thooksPath = .husky/_\n", ".husky/_", ""},
		{"case and spacing", "[CORE]\nHooksPath=hooks\n", "hooks", ""},
		{"quoted with comment", "[core]\n\thooksPath = \"my hooks\" ; why\n", "my hooks", ""},
		{"comment after value", "[core]\n\thooksPath = githooks # team hooks\n", "githooks", ""},
		{"same line as section", "[core] hooksPath = x\n", "x", ""},
		{"last wins", "[core]\nhooksPath = a\n[user]\nname = n\n[core]\nhooksPath = b\n", "b", ""},
		{"subsection is not core", "[core \"x\"]\nhooksPath = a\n", "", ""},
		{"other section", "[alias]\nhooksPath = a\n", "", ""},
		{"submodule worktree", "[core]\n\tworktree = ../../../sub\n", "", "../../../sub"},
		{"comments and blanks", "# c\n; c\n\n[core]\n# hooksPath = no\nhooksPath = yes\n", "yes", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "config")
			require.NoError(t, os.WriteFile(f, []byte(tc.config), 0o644))
			h, w := gitdir.CoreValues(f)
			assert.Equal(t, tc.hooksPath, h)
			assert.Equal(t, tc.worktree, w)
		})
	}
}

// The path guard refuses the hooks directory core.hooksPath names, present
// or not yet created, naming the rule; without the setting it is ordinary.
func TestResolvePathHooksPath(t *testing.T) {
	ws := t.TempDir()
	newRepo(t, ws)
	_, err := ResolvePath(ws, ".husky/_/pre-commit", true)
	require.NoError(t, err, "without core.hooksPath .husky is ordinary")

	hostGit(t, ws, "config", "core.hooksPath", ".husky/_")
	for _, p := range []string{".husky/_/pre-commit", ".husky/_", "./.husky/_/h", filepath.Join(ws, ".husky/_/post-checkout")} {
		_, err := ResolvePath(ws, p, true)
		var pe *ProtectedError
		require.ErrorAs(t, err, &pe, p)
		assert.Equal(t, protected.GitHooks, pe.Rule)
		assert.Contains(t, err.Error(), "core.hooksPath")
	}
	_, err = ResolvePath(ws, ".husky/pre-commit", true)
	assert.NoError(t, err, "only the directory git runs hooks from")
}
