package settingsfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// git add -A in a repository where custos learned a rule and an older job
// kept its transcript takes the shared settings and never the local files
// (learned rules, what the model read), with the real git.
func TestLocalFilesStayOutOfGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: the test checks what git itself takes")
	}
	for _, tc := range []struct {
		name     string
		existing string // .custos/.gitignore before, "" none
	}{
		{name: "no .gitignore yet"},
		{name: "the user's own .gitignore is kept", existing: "tmp/\n/settings.local.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			git := func(args ...string) string {
				cmd := exec.Command("git", args...)
				cmd.Dir = ws
				cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "git %v: %s", args, out)
				return string(out)
			}
			git("init", "-q")
			require.NoError(t, os.MkdirAll(filepath.Join(ws, ".custos", "sessions"), 0o755))
			if tc.existing != "" {
				require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", ".gitignore"), []byte(tc.existing), 0o644))
			}
			require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", "settings.json"), []byte(`{}`), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", "sessions", "job.jsonl"), []byte("{}\n"), 0o644))
			require.NoError(t, AddRule(ws, "allow", "Bash(npm test:*)"))
			require.NoError(t, AddRule(ws, "allow", "Bash(go test:*)")) // a second time adds nothing to .gitignore
			git("add", "-A")
			staged := strings.Fields(git("diff", "--cached", "--name-only"))
			assert.ElementsMatch(t, []string{".custos/.gitignore", ".custos/settings.json"}, staged)
			ignore, err := os.ReadFile(filepath.Join(ws, ".custos", ".gitignore"))
			require.NoError(t, err)
			if tc.existing != "" {
				assert.True(t, strings.HasPrefix(string(ignore), tc.existing+"\n"), "the user's lines first, unchanged: %q", ignore)
			}
			assert.Equal(t, 1, strings.Count(string(ignore), "sessions/"), "%q", ignore)
			assert.Equal(t, 1, strings.Count(string(ignore), "settings.local.json"), "%q", ignore)
		})
	}
}

func TestIgnoreLocalLeavesASymlinkAlone(t *testing.T) {
	ws := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere")
	require.NoError(t, os.WriteFile(target, []byte("x\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".custos"), 0o755))
	require.NoError(t, os.Symlink(target, filepath.Join(ws, ".custos", ".gitignore")))
	err := IgnoreLocal(ws)
	require.ErrorContains(t, err, "not a regular file")
	data, _ := os.ReadFile(target)
	assert.Equal(t, "x\n", string(data), "nothing written through the link")
}
