package mcpservers

import (
	"os"
	"testing"

	"github.com/custos-dev/custos/sandbox"
)

// TestMain lets the test binary act as the sandbox's helpers, as the
// worker's main() does: the host-config check of a writing server's
// overlay runs in one (without it, that check fails closed).
func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	os.Exit(m.Run())
}
