package sandboxcmd

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/custos-dev/custos/sandbox"
)

// TestMain lets this test binary serve as the sandbox's helpers (the
// allowlist bridge re-executes it), as starter's main does, and keeps what
// the commands under test keep (workspace caches) in a state directory of
// this process, never the user's.
func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	state, err := os.MkdirTemp("", "custos-sandboxcmd-test-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	// go leaves module directories read-only.
	_ = filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(state)
	os.Exit(code)
}
