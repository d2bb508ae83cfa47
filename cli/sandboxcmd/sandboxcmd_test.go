package sandboxcmd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runSandbox(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

// `starter sandbox exec` applies the settings' Read and Edit deny rules the
// way a job's Bash does, so a user can see them work.
func TestSandboxExecAppliesDenyRules(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bwrap missing and CI is set")
		}
		t.Skip("bwrap not installed")
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, withRules := range []bool{false, true} {
		ws := t.TempDir()
		writeTestFile(t, filepath.Join(ws, ".env"), "KEY=topsecret")
		writeTestFile(t, filepath.Join(ws, "go.mod"), "module x\n")
		if withRules {
			writeTestFile(t, filepath.Join(ws, ".custos", "settings.json"), `{"permissions": {"deny": ["Read(.env)", "Edit(go.mod)"]}}`)
		}
		code, out, errOut := runSandbox(t, "exec", "--workspace", ws, "--explain", "--", "bash", "-c", "cat .env; echo changed > go.mod")
		mod, err := os.ReadFile(filepath.Join(ws, "go.mod"))
		require.NoError(t, err)
		if withRules {
			assert.NotEqual(t, 0, code)
			assert.NotContains(t, out, "topsecret")
			assert.Contains(t, errOut, "Permission denied")
			assert.Equal(t, "module x\n", string(mod))
			assert.Contains(t, errOut, "mask hidden")
			assert.Contains(t, errOut, "mask read-only")
		} else {
			assert.Equal(t, 0, code, errOut)
			assert.Contains(t, out, "topsecret")
			assert.Equal(t, "changed\n", string(mod))
		}
	}
	code, out, _ := runSandbox(t, "check")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "backend: bwrap")
}

// Without bubblewrap, `check` says so and how to fix it, and `exec` refuses
// unless the user's own settings allow unsandboxed runs.
func TestSandboxWithoutBwrap(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"bash", "prlimit"} {
		p, err := exec.LookPath(tool)
		require.NoError(t, err)
		require.NoError(t, os.Symlink(p, filepath.Join(bin, tool)))
	}
	t.Setenv("PATH", bin)
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)

	code, out, _ := runSandbox(t, "check")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "backend: fallback")
	assert.Contains(t, out, "install bubblewrap")

	ws := t.TempDir()
	code, _, errOut := runSandbox(t, "exec", "--workspace", ws, "--", "bash", "-c", "echo ran > ran.txt")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "allowUnsandboxed")
	assert.NoFileExists(t, filepath.Join(ws, "ran.txt"))

	writeTestFile(t, filepath.Join(ws, ".custos", "settings.json"), `{"sandbox": {"allowUnsandboxed": true}}`)
	code, _, errOut = runSandbox(t, "exec", "--workspace", ws, "--", "bash", "-c", "echo ran > ran.txt")
	assert.Equal(t, 1, code, "a workspace cannot allow it")
	assert.NoFileExists(t, filepath.Join(ws, "ran.txt"))

	writeTestFile(t, filepath.Join(cfg, "custos", "settings.json"), `{"sandbox": {"allowUnsandboxed": true}}`)
	code, _, errOut = runSandbox(t, "exec", "--workspace", ws, "--", "bash", "-c", "echo ran > ran.txt")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "WITHOUT OS isolation")
	assert.FileExists(t, filepath.Join(ws, "ran.txt"))
}

// `sandbox check --workspace` says what the workspace's toolchains are
// given, and `sandbox cache` lists the workspace caches a command made and
// clears them.
func TestSandboxCheckAndCache(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bwrap missing and CI is set")
		}
		t.Skip("bwrap not installed")
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	ws := t.TempDir()
	writeTestFile(t, filepath.Join(ws, "go.mod"), "module x\n\ngo 1.22\n")
	writeTestFile(t, filepath.Join(ws, "web", "package.json"), "{}")

	code, out, errOut := runSandbox(t, "check", "--workspace", ws)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "workspace: "+ws)
	assert.Contains(t, out, "toolchains: go (go.mod), node (web/package.json)")
	assert.Contains(t, out, "workspace caches: "+filepath.Join(state, "custos", "sandbox-cache"))
	assert.Contains(t, out, "not made yet")
	assert.Contains(t, out, "git identity: ")

	// Narrowed by the workspace's settings.
	writeTestFile(t, filepath.Join(ws, ".custos", "settings.json"), `{"sandbox": {"toolchains": ["node"]}}`)
	_, out, _ = runSandbox(t, "check", "--workspace", ws)
	assert.Contains(t, out, "toolchains: node (web/package.json)")

	code, _, errOut = runSandbox(t, "exec", "--workspace", ws, "--", "bash", "-c", `echo warm > "$GOCACHE/marker"`)
	require.Equal(t, 0, code, errOut)
	code, out, errOut = runSandbox(t, "cache")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, ws)
	assert.NotContains(t, out, "  none")
	code, out, errOut = runSandbox(t, "cache", "--workspace", ws, "--clear")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "cleared "+ws)
	_, out, _ = runSandbox(t, "cache")
	assert.Contains(t, out, "  none")
}
