// Package testbin finds and places the binaries tests run, such as the real
// Temporal CLI. It imports nothing of custos, so the tests of every package
// (devserver's and temporalclient's included) may use it.
package testbin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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

// Temporal is TemporalCLI for a test: it skips where the CLI is not
// installed, except under CI, where make deps installs it and its absence
// fails the test.
func Temporal(t testing.TB) string {
	t.Helper()
	p, err := TemporalCLI()
	if errors.Is(err, ErrNoTemporalCLI) {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// LinkOrCopy makes src runnable at dst by every user: a hard link, or a
// copy across file systems (src may live under /root, which other users
// cannot enter).
func LinkOrCopy(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.Link(src, dst); err != nil {
		if err := copyFile(src, dst); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dst, 0o755); err != nil {
		t.Fatal(err)
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
