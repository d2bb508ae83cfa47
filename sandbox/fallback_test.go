package sandbox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewFallback(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{name: "missing bwrap gives the refusing fallback", cfg: Config{BwrapPath: "/nonexistent/bwrap"}},
		{name: "missing bwrap with FailIfUnavailable is an error", cfg: Config{BwrapPath: "/nonexistent/bwrap", FailIfUnavailable: true}, wantErr: true},
		{name: "bwrap that fails the probe gives the refusing fallback", cfg: Config{BwrapPath: "/bin/false"}},
		{name: "bwrap that fails the probe with FailIfUnavailable", cfg: Config{BwrapPath: "/bin/false", FailIfUnavailable: true}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb, err := New(tc.cfg)
			if tc.wantErr {
				require.Error(t, err)
				assert.True(t, errors.Is(err, ErrUnavailable), "%v", err)
				assert.Nil(t, sb)
				return
			}
			require.NoError(t, err)
			name, why := sb.Backend()
			assert.Equal(t, BackendFallback, name)
			assert.NotEmpty(t, why)
			// No silent fallback: without the user's consent the command
			// is refused, saying why and how to fix it, and does not run.
			ws := t.TempDir()
			_, err = sb.Run(context.Background(), Request{Workspace: ws, Argv: bash("echo ran > ran.txt")})
			require.ErrorIs(t, err, ErrUnavailable)
			for _, want := range []string{why, "install bubblewrap", "user namespaces", "allowUnsandboxed"} {
				assert.Contains(t, err.Error(), want)
			}
			assert.NoFileExists(t, filepath.Join(ws, "ran.txt"))
			res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash("echo ran > ran.txt"), AllowUnconfined: true})
			require.NoError(t, err)
			assert.Equal(t, BackendFallback, res.Backend)
			assert.Contains(t, res.Note, "WITHOUT OS isolation")
			assert.FileExists(t, filepath.Join(ws, "ran.txt"))
		})
	}
}

func TestFallbackRestrictions(t *testing.T) {
	sb, err := New(Config{BwrapPath: "/nonexistent/bwrap", KillGrace: 300 * time.Millisecond})
	require.NoError(t, err)
	t.Setenv("OPENAI_API_KEY", "fallback-secret")
	ws := t.TempDir()
	real := mustEval(t, ws)

	res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash("pwd; env"), AllowUnconfined: true})
	require.NoError(t, err)
	assert.Contains(t, res.Stdout, real+"\n", "cwd is the workspace")
	assert.NotContains(t, res.Stdout, "fallback-secret")

	token := fmt.Sprintf("custos-fb-%d", time.Now().UnixNano())
	start := time.Now()
	res, err = sb.Run(context.Background(), Request{Workspace: ws, Timeout: time.Second, AllowUnconfined: true,
		Argv: bash("setsid bash -c 'exec -a " + token + " sleep 1000' >/dev/null 2>&1 & exec -a " + token + " sleep 1000")})
	require.NoError(t, err)
	assert.True(t, res.Killed)
	assert.Equal(t, "timeout", res.KillReason)
	assert.Less(t, time.Since(start), 6*time.Second)
	assert.Empty(t, processesWith(token), "the detached grandchild must be killed too (cookie scan)")

	res, err = sb.Run(context.Background(), Request{Workspace: ws, Argv: bash("yes"), MaxOutput: 1000, AllowUnconfined: true})
	require.NoError(t, err)
	assert.True(t, res.Killed)
	assert.Equal(t, "output limit", res.KillReason)
	assert.Len(t, res.Stdout, 1000)
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return r
}
