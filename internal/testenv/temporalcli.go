package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNoTemporalCLI is TemporalCLI's error when the CLI is neither on PATH
// nor in GOPATH/bin: a test that needs it may skip.
var ErrNoTemporalCLI = errors.New("the Temporal CLI is not installed (make deps installs it)")

// TemporalCLI finds the real Temporal CLI: on PATH or in GOPATH/bin, where
// `make deps` installs it.
func TemporalCLI() (string, error) {
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOPATH: %w", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "bin", "temporal")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoTemporalCLI, err)
	}
	return p, nil
}
