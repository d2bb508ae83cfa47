package gitdir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
			h, w := CoreValues(f)
			assert.Equal(t, tc.hooksPath, h)
			assert.Equal(t, tc.worktree, w)
		})
	}
}
