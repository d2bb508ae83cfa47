package devserver

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

const (
	testTaskQueue  = "devserver-test"
	testWorkflowID = "devserver-persisted"
	// childDBEnv makes TestChildRunWorkflow run (in a child process) against
	// the given DB file; without it that test skips.
	childDBEnv = "CUSTOS_DEVSERVER_CHILD_DB"
)

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func greet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out string
	err := workflow.ExecuteActivity(ctx, greetActivity, name).Get(ctx, &out)
	return out, err
}

func greetActivity(ctx context.Context, name string) (string, error) {
	activity.GetLogger(ctx).Debug("greeting", "name", name)
	return "hello " + name, nil
}

// TestServerPersistsAcrossRestart runs a workflow to completion on a server
// with a fresh DB file, stops it, starts a new server on the same file and
// finds the workflow there; it also checks the Web UI end to end.
//
// The first server runs in a child process (TestChildRunWorkflow) and the
// second in this one. The SQLite plugin keeps one connection per DSN open
// for the life of the process, so two servers in one process would share a
// connection and never prove that the data reached the file.
func TestServerPersistsAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two Temporal servers")
	}
	dbFile := filepath.Join(t.TempDir(), "state", "temporal.db") // parent dir created by Start

	cmd := exec.Command(os.Args[0], "-test.run=^TestChildRunWorkflow$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childDBEnv+"="+dbFile)
	out, err := cmd.CombinedOutput()
	t.Logf("first server (child process):\n%s", out)
	require.NoError(t, err, "child process failed")
	require.Contains(t, string(out), "--- PASS: TestChildRunWorkflow", "child test did not run")

	info, err := os.Stat(dbFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "DB file should be private")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	srv, err := Start(ctx, Options{DBFile: dbFile, Logger: quietLogger()})
	require.NoError(t, err)
	t.Logf("restart on existing DB with UI: %v", time.Since(began))
	defer func() { require.NoError(t, srv.Stop()) }()

	require.True(t, strings.HasPrefix(srv.FrontendAddr(), "127.0.0.1:"), srv.FrontendAddr())
	require.True(t, strings.HasPrefix(srv.UIAddr(), "http://127.0.0.1:"), srv.UIAddr())

	c, err := client.DialContext(ctx, client.Options{
		HostPort:          srv.FrontendAddr(),
		Logger:            sdklog.NewStructuredLogger(quietLogger()),
		ConnectionOptions: client.ConnectionOptions{TLS: srv.ClientTLS()},
	})
	require.NoError(t, err)
	defer c.Close()

	desc, err := c.DescribeWorkflowExecution(ctx, testWorkflowID, "")
	require.NoError(t, err, "workflow from the first server should be in the DB")
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())

	// The result is in the persisted history too.
	var got string
	require.NoError(t, c.GetWorkflow(ctx, testWorkflowID, "").Get(ctx, &got))
	require.Equal(t, "hello custos", got)

	// A second server on the same file is refused while this one runs.
	_, err = Start(ctx, Options{DBFile: dbFile, UIPort: -1, Logger: quietLogger()})
	require.ErrorIs(t, err, ErrDBInUse)

	// The UI serves its page, and its API reaches the frontend.
	ui := loginUI(t, srv)
	body := httpGet(t, ui, srv.UIAddr()+"/")
	require.Contains(t, strings.ToLower(body), "<html")
	var nsResp struct {
		Namespaces []struct {
			NamespaceInfo struct {
				Name string `json:"name"`
			} `json:"namespaceInfo"`
		} `json:"namespaces"`
	}
	require.NoError(t, json.Unmarshal([]byte(httpGet(t, ui, srv.UIAddr()+"/api/v1/namespaces")), &nsResp))
	var names []string
	for _, ns := range nsResp.Namespaces {
		names = append(names, ns.NamespaceInfo.Name)
	}
	require.Contains(t, names, "default")

	// Stop is idempotent; the deferred Stop above must also return nil.
	require.NoError(t, srv.Stop())
	// The same logged-in client that just got the page is refused at the
	// socket: the UI is down, not merely refusing this client.
	_, err = ui.Get(srv.UIAddr() + "/")
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "UI should be down after Stop")

	// Stop released the file.
	l, err := lockDB(dbFile)
	require.NoError(t, err)
	if l != nil { // nil where there is no flock
		require.NoError(t, l.Close())
	}
}

// TestChildRunWorkflow is the first half of TestServerPersistsAcrossRestart;
// it only runs as that test's child process.
func TestChildRunWorkflow(t *testing.T) {
	dbFile := os.Getenv(childDBEnv)
	if dbFile == "" {
		t.Skip("runs only as a child of TestServerPersistsAcrossRestart")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	began := time.Now()
	srv, err := Start(ctx, Options{DBFile: dbFile, UIPort: -1, Logger: quietLogger()})
	require.NoError(t, err)
	t.Logf("first start, new DB, no UI: %v", time.Since(began))
	require.Empty(t, srv.UIAddr())

	c, err := client.DialContext(ctx, client.Options{
		HostPort:          srv.FrontendAddr(),
		Logger:            sdklog.NewStructuredLogger(quietLogger()),
		ConnectionOptions: client.ConnectionOptions{TLS: srv.ClientTLS()},
	})
	require.NoError(t, err)

	w := worker.New(c, testTaskQueue, worker.Options{})
	w.RegisterWorkflow(greet)
	w.RegisterActivity(greetActivity)
	require.NoError(t, w.Start())

	began = time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: testWorkflowID, TaskQueue: testTaskQueue}, greet, "custos")
	require.NoError(t, err)
	var got string
	require.NoError(t, run.Get(ctx, &got))
	require.Equal(t, "hello custos", got)
	t.Logf("workflow with one activity: %v", time.Since(began))

	w.Stop()
	c.Close()
	began = time.Now()
	require.NoError(t, srv.Stop())
	t.Logf("stop: %v", time.Since(began))
	require.NoError(t, srv.Stop(), "second Stop is a no-op")
}

func httpGet(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", url, b)
	return string(b)
}

func TestStartRejectsBadOptions(t *testing.T) {
	// Each option is refused for its own reason, before anything starts.
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{IP: "0.0.0.0"}, "devserver: IP 0.0.0.0 is not a loopback address"},
		{Options{IP: "192.0.2.1"}, "devserver: IP 192.0.2.1 is not a loopback address"},
		{Options{IP: "not-an-ip"}, `devserver: invalid IP "not-an-ip"`},
		{Options{Port: 70000}, "devserver: invalid port 70000"},
		{Options{UIPort: -2}, "devserver: invalid UI port -2"},
	} {
		_, err := Start(context.Background(), tc.o)
		require.ErrorContains(t, err, tc.want, "%+v", tc.o)
	}
}

func TestStartReportsBusyPort(t *testing.T) {
	ps, err := allocatePorts("127.0.0.1", 0, -1)
	require.NoError(t, err)
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ps.frontend)))
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	_, err = Start(context.Background(), Options{Port: ps.frontend, UIPort: -1})
	require.ErrorContains(t, err, "not available")
}

func TestAllocatePortsDistinct(t *testing.T) {
	ps, err := allocatePorts("127.0.0.1", 0, 0)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, p := range []int{ps.frontend, ps.frontendHTTP, ps.ui, ps.history, ps.matching, ps.worker} {
		require.NotZero(t, p)
		require.False(t, seen[p], "port %d used twice in %+v", p, ps)
		seen[p] = true
	}
}

func TestDefaultDBFile(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	got, err := DefaultDBFile()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(state, "custos", "temporal.db"), got)
	info, err := os.Stat(filepath.Dir(got))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	home := t.TempDir()
	t.Setenv("XDG_STATE_HOME", "relative/ignored")
	t.Setenv("HOME", home)
	got, err = DefaultDBFile()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(home, ".local", "state", "custos", "temporal.db"), got)
}

// TestInMemoryNamespace checks the in-memory mode and that a non-default
// namespace is created with at least a day of retention and the requested
// custom search attribute.
func TestInMemoryNamespace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	srv, err := Start(ctx, Options{
		UIPort:           -1,
		Namespace:        "custos-test",
		Logger:           quietLogger(),
		SearchAttributes: map[string]enumspb.IndexedValueType{"CustosState": enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	})
	require.NoError(t, err)
	t.Logf("in-memory start: %v", time.Since(began))
	defer func() { require.NoError(t, srv.Stop()) }()

	c, err := client.DialContext(ctx, client.Options{
		HostPort:          srv.FrontendAddr(),
		Namespace:         "custos-test",
		Logger:            sdklog.NewStructuredLogger(quietLogger()),
		ConnectionOptions: client.ConnectionOptions{TLS: srv.ClientTLS()},
	})
	require.NoError(t, err)
	defer c.Close()

	ns, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "custos-test"})
	require.NoError(t, err)
	require.GreaterOrEqual(t, ns.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(), 24*time.Hour)

	sa, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "custos-test"})
	require.NoError(t, err)
	require.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, sa.GetCustomAttributes()["CustosState"])
}
