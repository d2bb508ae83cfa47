package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serviceScript answers each line on stdin with the result of running it
// as a shell command, one line per answer: a server as simple as one can be.
const serviceScript = `while IFS= read -r line; do out=$( { eval "$line"; } 2>&1; echo " rc=$?"); printf '%s\n' "$(printf '%s' "$out" | tr '\n' ' ')"; done`

// ask sends one line to the service and reads its one-line answer.
func ask(t *testing.T, p *Process, r *bufio.Reader, line string) string {
	t.Helper()
	_, err := io.WriteString(p.Stdin, line+"\n")
	require.NoError(t, err)
	got, err := r.ReadString('\n')
	require.NoError(t, err, "stderr: %s", p.Stderr())
	return strings.TrimSpace(got)
}

func TestServiceOutlivesTheCommandTimeoutAndAnswersOverStdio(t *testing.T) {
	sb := newBwrap(t, Config{DefaultTimeout: time.Second, MaxTimeout: time.Second, CPUSeconds: 5, MemoryBytes: 1 << 30})
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello"), 0o644))
	p, err := Start(context.Background(), sb, Request{Workspace: ws, Argv: bash(serviceScript)})
	require.NoError(t, err)
	defer p.Stop()
	r := bufio.NewReader(p.Stdout)
	assert.Equal(t, "hello rc=0", ask(t, p, r, "cat a.txt"))
	time.Sleep(1500 * time.Millisecond) // past the commands' timeout
	assert.Equal(t, "hello rc=0", ask(t, p, r, "cat a.txt"), "a service is not killed by the commands' timeout")
	assert.Equal(t, "unlimited unlimited  rc=0", ask(t, p, r, "echo $(ulimit -t) $(ulimit -v)"), "nor by the commands' CPU-time and address-space limits")
	// It writes to the workspace directly, and at once (no overlay to apply at its end).
	assert.Equal(t, "rc=0", ask(t, p, r, "echo made > b.txt"))
	b, err := os.ReadFile(filepath.Join(ws, "b.txt"))
	require.NoError(t, err)
	assert.Equal(t, "made\n", string(b))
	// The walls of every command still stand.
	secret := filepath.Join(t.TempDir(), "id_ed25519")
	require.NoError(t, os.WriteFile(secret, []byte("PRIVATE-KEY"), 0o600))
	assert.NotContains(t, ask(t, p, r, "cat "+secret), "PRIVATE-KEY", "a file outside the workspace is not there")
	assert.Contains(t, ask(t, p, r, "echo x > /etc/custos-escape"), "rc=1", "nothing outside the workspace is writable")
	assert.Contains(t, ask(t, p, r, "exec 3<>/dev/tcp/127.0.0.1/22"), "rc=1", "no network")
}

func TestServiceWithReadOnlyWorkspace(t *testing.T) {
	for _, m := range mounters(t, newBwrap(t, Config{})) {
		t.Run(m.name, func(t *testing.T) { readOnlyService(t, m.sb) })
	}
}

func readOnlyService(t *testing.T, sb Sandbox) {
	ws := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "src", "a.go"), []byte("package a"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".env"), []byte("TOKEN=s3cret"), 0o644))
	p, err := Start(context.Background(), sb, Request{Workspace: ws, Argv: bash(serviceScript), ReadOnlyWorkspace: true,
		ReadDeny: []string{".env"}})
	require.NoError(t, err)
	defer p.Stop()
	r := bufio.NewReader(p.Stdout)
	assert.Equal(t, "package a rc=0", ask(t, p, r, "cat src/a.go"))
	// Nothing is placed in the workspace for as long as the server runs (no
	// placeholder of a protected path, no mask's).
	ents, err := os.ReadDir(ws)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{".env", "src"}, names)
	for _, write := range []string{"echo x > new.txt", "echo x >> src/a.go", "rm src/a.go", "mkdir d", "mv src other", "touch .env"} {
		got := ask(t, p, r, write)
		assert.NotContains(t, got, "rc=0", "%s must fail on a read-only workspace", write)
	}
	assert.NotContains(t, ask(t, p, r, "cat .env"), "s3cret", "a Read deny rule's mask holds in a read-only workspace")
	assert.Equal(t, "rc=0", ask(t, p, r, "echo x > /tmp/scratch"), "its own /tmp is writable")
	_, err = os.Stat(filepath.Join(ws, "new.txt"))
	assert.True(t, errors.Is(err, os.ErrNotExist))
	b, _ := os.ReadFile(filepath.Join(ws, "src", "a.go"))
	assert.Equal(t, "package a", string(b))
}

func TestServiceStopKillsItsTreeAndExitEndsTheStream(t *testing.T) {
	sb := newBwrap(t, Config{})
	ws := t.TempDir()
	token := fmt.Sprintf("custos-svc-%d", time.Now().UnixNano())
	p, err := Start(context.Background(), sb, Request{Workspace: ws, Argv: bash(serviceScript)})
	require.NoError(t, err)
	r := bufio.NewReader(p.Stdout)
	assert.Equal(t, "rc=0", ask(t, p, r, "(exec -a "+token+" sleep 300 >/dev/null 2>&1 &)"))
	require.NotEmpty(t, processesWith(token))
	p.Stop()
	assert.Empty(t, processesWith(token), "the server's children go with it")
	_, err = r.ReadString('\n')
	require.Error(t, err)

	// A server that exits by itself: the stream says so.
	p2, err := Start(context.Background(), sb, Request{Workspace: ws, Argv: bash("read line; exit 3")})
	require.NoError(t, err)
	_, err = io.WriteString(p2.Stdin, "bye\n")
	require.NoError(t, err)
	_, err = io.ReadAll(p2.Stdout)
	require.ErrorIs(t, err, ErrServiceExited)
	assert.Contains(t, err.Error(), "exit code 3")
}

func TestFallbackNeverRunsAService(t *testing.T) {
	sb := &fallback{cfg: Config{}.withDefaults(), why: "test: no bwrap"}
	_, err := sb.Run(context.Background(), Request{Workspace: t.TempDir(), Argv: []string{"true"}, Service: true, AllowUnconfined: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not run servers unconfined")
}
