package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goProject writes a Go module that tests with testify (a dependency with
// dependencies of its own), its go.mod and go.sum made by the host's go
// from the host's module cache alone, as a user's checkout has them.
func goProject(t *testing.T, goLine string) string {
	t.Helper()
	ws := t.TempDir()
	write(t, ws, "go.mod", "module example.com/proj\n\ngo "+goLine+"\n")
	write(t, ws, "calc.go", "package proj\n\nfunc Add(a, b int) int { return a + b }\n")
	write(t, ws, "calc_test.go", `package proj

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAdd(t *testing.T) { assert.Equal(t, 3, Add(1, 2)) }
`)
	cmd := exec.Command("go", "get", "github.com/stretchr/testify@"+testifyVersion(t))
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the host's go get, from its module cache: %s", out)
	cmd = exec.Command("go", "mod", "tidy")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOTOOLCHAIN=local")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "the host's go mod tidy, from its module cache: %s", out)
	return ws
}

// testifyVersion is the testify custos itself requires: the one the host's
// module cache holds wherever custos' tests were built.
func testifyVersion(t *testing.T) string {
	b, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "github.com/stretchr/testify" {
			return f[1]
		}
	}
	t.Fatal("custos' go.mod requires no testify")
	return ""
}

func write(t *testing.T, dir, name, data string) {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
}

// TestGoModuleWithDependencyTestsOffline is issue 16's first finding: a Go
// module with one dependency could not run its tests in the sandbox. Now
// its modules come from the host's module cache, offline; the second run
// is warm (the workspace's own build cache answers); go vet works too.
func TestGoModuleWithDependencyTestsOffline(t *testing.T) {
	cache := t.TempDir()
	sb := newBwrap(t, Config{CacheDir: cache})
	ws := goProject(t, "1.22")
	ctx := context.Background()

	first, err := sb.Run(ctx, Request{Workspace: ws, Argv: bash("go test ./... && go vet ./..."), Timeout: 5 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, 0, first.ExitCode, "stdout: %s\nstderr: %s", first.Stdout, first.Stderr)
	assert.Contains(t, first.Stdout, "ok  \texample.com/proj")
	assert.NotContains(t, first.Stdout, "(cached)")
	assert.Equal(t, cacheDirFor(cache, ws), first.CacheDir)

	second, err := sb.Run(ctx, Request{Workspace: ws, Argv: bash("go test ./..."), Timeout: 5 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, 0, second.ExitCode, "stderr: %s", second.Stderr)
	assert.Contains(t, second.Stdout, "(cached)", "the second go test of a workspace is warm")

	// The modules were extracted into the workspace's own module cache.
	_, err = os.Stat(filepath.Join(cacheDirFor(cache, ws), "cache", "go-mod", "github.com", "stretchr", "testify@"+testifyVersion(t)))
	assert.NoError(t, err)
}
