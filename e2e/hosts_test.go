package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/cli"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Two worker processes stand in for two hosts, each holding its own
// workspace root. Each job's tools run only on its host; kill -9 of one
// host's worker leaves its job waiting (the other host's job goes on), and a
// restart resumes it. A workspace no live host holds is refused before the
// job starts.
func TestJobsRunOnTheHostThatHoldsTheWorkspace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the worker binary")
	}
	bin := buildWorker(t)
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	_, base := testenv.StartModel(t, byTask(map[string]string{"on alpha": "echo alpha > host.txt", "on beta": "echo beta > host.txt"}))
	rootA, rootB := testenv.Workspace(t), testenv.Workspace(t)
	wsA, wsB := filepath.Join(rootA, "svc"), filepath.Join(rootB, "app")
	require.NoError(t, os.MkdirAll(wsA, 0o755))
	require.NoError(t, os.MkdirAll(wsB, 0o755))
	env := func(host, root string) []string {
		return append(workerEnv(srv, base, t.TempDir()), "CUSTOS_HOST="+host, "CUSTOS_WORKSPACES="+root)
	}
	startWorkerProc(t, bin, env("alpha", rootA))
	beta := startWorkerProc(t, bin, env("beta", rootB))

	ctx := context.Background()
	var hosts []app.Host
	require.Eventually(t, func() bool {
		var err error
		hosts, err = app.LiveHosts(ctx, c)
		names := map[string]bool{}
		for _, h := range hosts {
			names[h.Name] = true
		}
		return err == nil && names["alpha"] && names["beta"]
	}, time.Minute, 200*time.Millisecond, "both hosts announce themselves")
	ha, err := app.Route(hosts, wsA)
	require.NoError(t, err)
	assert.Equal(t, "alpha", ha.Name)
	hb, err := app.Route(hosts, wsB)
	require.NoError(t, err)
	assert.Equal(t, "beta", hb.Name)

	// The starter refuses a workspace no host holds, before any job starts.
	// (On a shared server other tests' workers may hold "/".)
	if len(hosts) == 2 {
		for _, kv := range append(tlsEnv(srv), "TEMPORAL_ADDRESS="+srv.FrontendAddr()) {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		var out, errOut bytes.Buffer
		app := &cli.App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Logger: testenv.Logger()}
		code := app.Main(ctx, []string{"run", "--detach", "--workspace", t.TempDir(), "nowhere"})
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut.String(), "no live worker holds this workspace; live hosts: alpha ("+rootA+"); beta ("+rootB+")")
	} else {
		t.Logf("other hosts share this server (%v): the refusal is checked on a server of its own", hosts)
	}

	start := func(id, task, ws, host string, mode approval.Mode) client.WorkflowRun {
		run := testenv.StartJob(t, c, id, jobapi.JobInput{Once: true, Task: task, Workspace: ws, Host: host, Mode: mode, ApprovalTimeout: 10 * time.Minute})
		return run
	}
	runB := start("host-beta-job", "on beta", wsB, "beta", approval.ModeDefault)
	testenv.WaitPending(t, c, runB.GetID(), "b1", pendingWait)
	beta.kill()
	answer(t, c, runB.GetID(), "b1")

	runA := start("host-alpha-job", "on alpha", wsA, "alpha", approval.ModeBypass)
	testenv.Finished(t, c, runA.GetID(), 2*time.Minute, "alpha's job goes on while beta is away")
	assert.Equal(t, "alpha\n", readFile(t, wsA, "host.txt"))
	_, err = os.Stat(filepath.Join(wsB, "host.txt"))
	assert.True(t, os.IsNotExist(err), "beta's approved command waits for beta")
	d, err := c.DescribeWorkflowExecution(ctx, runB.GetID(), "")
	require.NoError(t, err)
	assert.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())

	startWorkerProc(t, bin, env("beta", rootB))
	testenv.Finished(t, c, runB.GetID(), 3*time.Minute, "beta's job resumes when beta comes back")
	assert.Equal(t, "beta\n", readFile(t, wsB, "host.txt"))

	for id, host := range map[string]string{runA.GetID(): "alpha", runB.GetID(): "beta"} {
		n := 0
		it := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			require.NoError(t, err)
			if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
				n++
				assert.Contains(t, a.GetIdentity(), `"host":"`+host+`"`, "%s: an activity ran off its host", id)
			}
		}
		assert.GreaterOrEqual(t, n, 4, "%s: settings, model, Bash, model", id)
	}
}
