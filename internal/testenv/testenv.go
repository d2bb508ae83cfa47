// Package testenv is what custos's integration tests run against, in one
// place: an embedded Temporal server on free loopback ports, a client on it,
// the scripted model (demomodel, a real HTTP server speaking the OpenAI
// protocol), custos workers started as the worker binary starts them, a
// quiet logger, and the queries a test asks of a job (is this call waiting,
// what was decided, what did the job answer).
//
// Only tests import it: it pulls in the whole Temporal server. Functions
// that take a testing.TB fail the test on error and undo what they started
// when the test ends; the rest return errors, for an environment shared by a
// package's tests and stopped in its TestMain (see Env).
package testenv

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
)

// Logger logs errors only, to stderr: the server and the SDK are chatty, and
// a failing test shows what went wrong.
func Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// TemporalLogger is Logger for the Temporal SDK.
func TemporalLogger() tlog.Logger { return tlog.NewStructuredLogger(Logger()) }

// Workspace is a new empty directory for a job, by its real path (the
// workspace guard compares real paths; t.TempDir may be behind a symlink).
func Workspace(t testing.TB) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return ws
}
