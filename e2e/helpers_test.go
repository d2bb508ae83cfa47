// Package e2e runs custos end to end: the real embedded Temporal server, real
// workers (in-process or as a separate process), a real HTTP server speaking
// the OpenAI protocol, real files and the real sandbox.
package e2e

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/workflows"
)

// binDirs are temp dirs of binaries built for the tests, removed at the end.
var binDirs []string

func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	code := m.Run()
	for _, d := range binDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// startServer gives the test a Temporal server: the embedded one on free
// ports with its SQLite file in dbFile ("" = a new temp file), or, when
// CUSTOS_E2E_TEMPORAL_ADDRESS is set, the external server there (see
// external_test.go), which the test then shares with the others.
func startServer(t *testing.T, dbFile string, port int) *testServer {
	t.Helper()
	if ext := externalServer(t); ext != nil {
		return ext
	}
	if dbFile == "" {
		dbFile = filepath.Join(t.TempDir(), "temporal.db")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{DBFile: dbFile, Port: port, UIPort: -1, Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })
	return embedded(srv)
}

// dial connects to srv as its owner (TLSServer covers both kinds).
func dial(t testing.TB, srv tlsServer) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Logger: tlog.NewStructuredLogger(quietLogger()),
		ConnectionOptions: client.ConnectionOptions{TLS: srv.ClientTLS()}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func startModel(t *testing.T, h demomodel.Handler) (*demomodel.Server, string) {
	t.Helper()
	srv := demomodel.New(h)
	base, err := srv.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv, base
}

func workspace(t *testing.T) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return ws
}

// waitPending polls the status query until callID is pending.
func waitPending(t *testing.T, c client.Client, id, callID string) {
	t.Helper()
	require.Eventually(t, func() bool {
		v, err := c.QueryWorkflow(context.Background(), id, "", workflows.StatusQuery)
		if err != nil {
			return false
		}
		var st workflows.Status
		if v.Get(&st) != nil {
			return false
		}
		for _, p := range st.Pending {
			if p.CallID == callID {
				return true
			}
		}
		return false
	}, 90*time.Second, 200*time.Millisecond, "call %s never became pending", callID)
}

func decisionsByCall(recs []approval.AuditRecord) map[string]approval.AuditRecord {
	out := map[string]approval.AuditRecord{}
	for _, r := range recs {
		if r.Event == "" {
			out[r.CallID] = r
		}
	}
	return out
}

func quietTemporalLogger() tlog.Logger { return tlog.NewStructuredLogger(quietLogger()) }

// tlsEnv points a worker process at srv through the TEMPORAL_TLS_* variables.
func tlsEnv(srv tlsServer) []string {
	f := srv.TLSFiles()
	return []string{"TEMPORAL_TLS_CLIENT_CERT_PATH=" + f.ClientCert, "TEMPORAL_TLS_CLIENT_KEY_PATH=" + f.ClientKey,
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH=" + f.CA, "TEMPORAL_TLS_SERVER_NAME=" + devserver.ServerName}
}

// startServerB starts an in-memory embedded server for a benchmark.
func startServerB(b *testing.B) *devserver.Server {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{UIPort: -1, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Stop() })
	return srv
}

// toolResult is the last tool result for callID that the model was sent.
func toolResult(model *demomodel.Server, callID string) string {
	var out string
	for _, req := range model.Requests() {
		for _, m := range req.Messages {
			if m.ToolCallID == callID {
				out = m.Content
			}
		}
	}
	return out
}
