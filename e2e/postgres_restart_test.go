package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// The PostgreSQL run (.ci/postgres-e2e) also sets CUSTOS_E2E_POSTGRES_ADDR,
// _USER, _PASSWORD and _DBS: a second pair of databases with Temporal's
// schema, for a server this test owns and may kill.
const postgresEnv = "CUSTOS_E2E_POSTGRES_ADDR"

func buildPGServer(t *testing.T) string {
	return buildBinary(t, "../devserver/pgserver", "pgserver")
}

// The Temporal server on PostgreSQL is killed with SIGKILL while a job waits
// for approval, and started again on the same databases: the worker (a
// separate process, connected by TEMPORAL_ADDRESS) reconnects, the job is
// still waiting, and finishes once approved. The embedded-server variant is
// TestEmbeddedServerKilledAndRestarted; this one runs where PostgreSQL is.
func TestPostgresServerKilledAndRestarted(t *testing.T) {
	pgAddr := os.Getenv(postgresEnv)
	if pgAddr == "" {
		t.Skip("no PostgreSQL: runs in make test-postgres (.ci/postgres-e2e), which sets " + postgresEnv)
	}
	store, visibility, ok := strings.Cut(os.Getenv("CUSTOS_E2E_POSTGRES_DBS"), ",")
	require.True(t, ok && store != "" && visibility != "", "CUSTOS_E2E_POSTGRES_DBS=store,visibility")

	pgserver := buildPGServer(t)
	worker := buildWorker(t)
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	tlsDir := filepath.Join(t.TempDir(), "tls")
	serverArgs := []string{"--pg", pgAddr, "--pg-user", os.Getenv("CUSTOS_E2E_POSTGRES_USER"),
		"--pg-db", store, "--pg-visibility-db", visibility, "--port", fmt.Sprint(port), "--tls-dir", tlsDir}
	serverEnv := []string{"PGPASSWORD=" + os.Getenv("CUSTOS_E2E_POSTGRES_PASSWORD")}
	server := startWorkerProc(t, pgserver, serverEnv, serverArgs...)

	c := dialEventually(t, addr, devserver.TLSFilesIn(tlsDir))
	_, base := testenv.StartModel(t, restartScript())
	startWorkerProc(t, worker, workerEnv(&testServer{addr: addr, certs: devserver.TLSFilesIn(tlsDir)}, base, t.TempDir()))

	ws := testenv.Workspace(t)
	ctx := context.Background()
	run := testenv.StartJob(t, c, fmt.Sprintf("pg-restart-%d", time.Now().UnixNano()), jobapi.JobInput{Once: true, Task: "survive", Workspace: ws, ApprovalTimeout: 10 * time.Minute})
	testenv.WaitPending(t, c, run.GetID(), "w1", pendingWait)

	server.kill()
	dctx, dcancel := context.WithTimeout(ctx, 3*time.Second)
	_, err := c.DescribeWorkflowExecution(dctx, run.GetID(), "")
	dcancel()
	require.Error(t, err, "the server is down")
	startWorkerProc(t, pgserver, serverEnv, serverArgs...)
	// Client and worker reconnect by themselves; the job is read back from
	// PostgreSQL.
	finishAfterRestart(t, c, run.GetID(), ws)
}
