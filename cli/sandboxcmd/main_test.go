package sandboxcmd

import (
	"os"
	"testing"

	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/sandbox/hostfs"
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
	_ = hostfs.RemoveAllWritable(state)
	os.Exit(code)
}
