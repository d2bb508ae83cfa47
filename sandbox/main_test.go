package sandbox

import (
	"os"
	"testing"
)

// TestMain lets the test binary act as the in-sandbox helper (bridge), the
// same way the worker's and starter's main() do.
func TestMain(m *testing.M) {
	MaybeRunHelper()
	os.Exit(m.Run())
}
