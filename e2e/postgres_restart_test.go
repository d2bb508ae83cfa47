package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/workflows"
)

// The PostgreSQL run (.ci/postgres-e2e) also sets CUSTOS_E2E_POSTGRES_ADDR,
// _USER, _PASSWORD and _DBS: a second pair of databases with Temporal's
// schema, for a server this test owns and may kill.
const postgresEnv = "CUSTOS_E2E_POSTGRES_ADDR"

var pgServerBin struct {
	sync.Once
	path string
	err  error
}

func buildPGServer(t *testing.T) string {
	t.Helper()
	pgServerBin.Do(func() {
		dir, err := os.MkdirTemp("", "custos-e2e-pg-")
		if err != nil {
			pgServerBin.err = err
			return
		}
		binDirs = append(binDirs, dir)
		pgServerBin.path = filepath.Join(dir, "pgserver")
		cmd := exec.Command("go", "build", "-o", pgServerBin.path, "../devserver/pgserver")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		pgServerBin.err = cmd.Run()
	})
	require.NoError(t, pgServerBin.err, "build pgserver")
	return pgServerBin.path
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
	_, base := startModel(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "out.txt", "content": "survived"})),
		demomodel.Say("done after a server restart"),
	))
	certs := devserver.TLSFilesIn(tlsDir)
	env := []string{"TEMPORAL_ADDRESS=" + addr, "OPENAI_BASE_URL=" + base, "OPENAI_API_KEY=k", "OPENAI_MODEL=fake",
		"XDG_CONFIG_HOME=" + t.TempDir(), "TEMPORAL_TLS_CLIENT_CERT_PATH=" + certs.ClientCert, "TEMPORAL_TLS_CLIENT_KEY_PATH=" + certs.ClientKey,
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH=" + certs.CA, "TEMPORAL_TLS_SERVER_NAME=" + devserver.ServerName}
	startWorkerProc(t, worker, env)

	ws := workspace(t)
	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("pg-restart-%d", time.Now().UnixNano()), TaskQueue: activities.TaskQueue},
		workflows.WorkflowName, workflows.JobInput{Task: "survive", Workspace: ws})
	require.NoError(t, err)
	waitPending(t, c, run.GetID(), "w1")

	server.kill()
	dctx, dcancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = c.DescribeWorkflowExecution(dctx, run.GetID(), "")
	dcancel()
	require.Error(t, err, "the server is down")
	startWorkerProc(t, pgserver, serverEnv, serverArgs...)
	// Client and worker reconnect by themselves; the job is read back from
	// PostgreSQL.
	waitPending(t, c, run.GetID(), "w1")
	require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), "", workflows.ApprovalSignal,
		workflows.ApprovalDecision{CallID: "w1", Decision: "allow", By: "e2e"}))
	gctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var res workflows.JobResult
	require.NoError(t, c.GetWorkflow(gctx, run.GetID(), "").Get(gctx, &res))
	assert.Equal(t, "done after a server restart", res.Answer)
	assert.Equal(t, "survived", readFile(t, ws, "out.txt"))
	recs, err := activities.ReadAudit(ws, run.GetID())
	require.NoError(t, err)
	assert.Equal(t, approval.LayerHuman, decisionsByCall(recs)["w1"].Layer)
}
