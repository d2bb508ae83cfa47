package sandbox

import (
	"os"
	"testing"
)

// TestMain lets the test binary act as the in-sandbox helper (bridge), the
// same way the worker's and starter's main() do, and as the /proc walker
// (procwalk_test.go).
func TestMain(m *testing.M) {
	maybeRunProcWalk()
	MaybeRunHelper()
	os.Exit(m.Run())
}
