package hostguard

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain lets the test binary serve as the merged view's check helper,
// as sandbox.MaybeRunHelper does for custos' own binaries.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == HelperHostCheckName {
		os.Exit(RunHelper(os.Stdin, os.Stdout))
	}
	WireHelper()
	os.Exit(m.Run())
}
