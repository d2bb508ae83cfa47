package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// The worker process runs the embedded server (SQLite file); it is killed
// with SIGKILL while a call waits for approval, server and all, and started
// again on the same file: the job is still there, still waiting, and
// finishes once approved.
func TestEmbeddedServerKilledAndRestarted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the worker binary and kills it")
	}
	if usingExternalServer() {
		// The server under test here is the worker's own embedded one; an
		// external server's process belongs to whoever started it.
		t.Skip("kills and restarts the embedded server, which " + externalAddrEnv + " replaces; TestPostgresServerKilledAndRestarted does this to the PostgreSQL-backed server")
	}
	bin := buildWorker(t)
	db := filepath.Join(t.TempDir(), "temporal.db")
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	_, base := testenv.StartModel(t, restartScript())
	env := append(testenv.ModelEnv(base), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+testenv.StateDir(), "TEMPORAL_ADDRESS=")
	args := []string{"--db", db, "--port", fmt.Sprint(port), "--ui-port", "-1"}
	w := startWorkerProc(t, bin, env, args...)

	// The worker's server makes its certificates beside its DB file.
	c := dialEventually(t, addr, devserver.TLSFilesIn(filepath.Join(filepath.Dir(db), "tls")))
	ws := testenv.Workspace(t)
	run := testenv.StartJob(t, c, "server-restart", jobapi.JobInput{Once: true, Task: "survive", Workspace: ws, ApprovalTimeout: 10 * time.Minute})
	testenv.WaitPending(t, c, run.GetID(), "w1", pendingWait)

	w.kill()
	startWorkerProc(t, bin, env, args...)
	// The client reconnects by itself; the job is read back from SQLite.
	finishAfterRestart(t, c, run.GetID(), ws)
}

// restartScript is the model of the server-restart tests: one Write, which
// waits for a person across the restart, then an answer.
func restartScript() demomodel.Handler {
	return demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "out.txt", "content": "survived"})),
		demomodel.Say("done after a server restart"),
	)
}

// finishAfterRestart checks a restartScript job in ws once its server is
// back: the Write still waits, and once approved it runs, the job answers,
// and the audit names the person's decision.
func finishAfterRestart(t *testing.T, c client.Client, id, ws string) {
	t.Helper()
	testenv.WaitPending(t, c, id, "w1", pendingWait)
	require.NoError(t, c.SignalWorkflow(context.Background(), id, "", jobapi.ApprovalSignal,
		jobapi.ApprovalDecision{CallID: "w1", Decision: "allow", By: "e2e"}))
	res := testenv.Finished(t, c, id, 2*time.Minute)
	assert.Equal(t, "done after a server restart", res.Answer)
	assert.Equal(t, "survived", readFile(t, ws, "out.txt"))
	recs, err := activities.ReadAudit(testenv.JobFiles(t, c, id).Audit)
	require.NoError(t, err)
	assert.Equal(t, approval.LayerHuman, testenv.Decisions(recs)["w1"].Layer)
}

// dialEventually connects once the server at addr answers, with the client
// certificate in certs once the server has made it.
func dialEventually(t *testing.T, addr string, certs devserver.TLSFiles) client.Client {
	t.Helper()
	var c client.Client
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		tc, err := certs.ClientTLS()
		if err != nil {
			return false
		}
		c, err = client.DialContext(ctx, testenv.ClientOptions(addr, tc))
		return err == nil
	}, 2*time.Minute, 500*time.Millisecond, "server at %s never answered", addr)
	t.Cleanup(c.Close)
	return c
}
