// Package gittest runs the real git on the host for tests, the way a user,
// an IDE or a shell prompt would, with no user or system configuration
// leaking in: to build repositories in every layout, and to see whether
// git on the host runs what a sandboxed command planted. It is test
// support: no product package imports it (internal/archtest pins that).
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Run runs git in dir and fails the test if git fails.
func Run(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{
		"-c", "user.name=custos test", "-c", "user.email=test@custos.invalid",
		"-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always",
	}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}

// NewRepo makes dir a repository with one commit.
func NewRepo(t testing.TB, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	Run(t, dir, "init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("hi\n"), 0o644))
	Run(t, dir, "add", "README")
	Run(t, dir, "commit", "-qm", "init")
}

// Runs runs git in dir as an IDE or a shell prompt does (the repository's
// own config applies; no user or system config) and reports whether that
// ran what a command planted: the planted programs create flag.
func Runs(t testing.TB, flag, dir string, args ...string) bool {
	t.Helper()
	_ = os.Remove(flag)
	cmd := exec.Command("git", append([]string{"-c", "user.name=u", "-c", "user.email=u@x.invalid"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, _ := cmd.CombinedOutput()
	_, err := os.Stat(flag)
	t.Logf("host: git %s in %s: ran planted program=%v: %s", strings.Join(args, " "), dir, err == nil, strings.TrimSpace(string(out)))
	return err == nil
}
