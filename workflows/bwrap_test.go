package workflows

import (
	"os"
	"os/exec"
	"testing"
)

// requireBwrap is for scenarios whose point is the sandbox. bwrap is found
// on PATH, as the sandbox finds it; without it the test skips, or fails when
// CI is set (CI installs it). Such scenarios also build their harness with
// FailIfUnavailable, so an unusable bwrap fails them rather than falling back.
func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bwrap is not on PATH (%v): CI must run the sandbox scenarios", err)
		}
		t.Skipf("bwrap is not on PATH (%v): the sandbox half of this scenario needs it", err)
	}
}
