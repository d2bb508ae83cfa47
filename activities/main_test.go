package activities

import (
	"os"
	"testing"

	"github.com/custos-dev/custos/sandbox"
)

// TestMain lets this test binary serve as the sandbox's helpers (the
// host-config check on a command's merged view runs as one), as the
// worker's main does.
func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	code := m.Run()
	closeLSPBench()
	os.Exit(code)
}
