package e2e

import (
	"context"
	"crypto/tls"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// The suite runs against the embedded server by default. With
// CUSTOS_E2E_TEMPORAL_ADDRESS (host:port) and CUSTOS_E2E_TEMPORAL_TLS_DIR
// (the server's certificate directory, as devserver lays it out) set, every
// test that only needs "a Temporal server" uses that server instead, and
// worker processes reach it through TEMPORAL_ADDRESS and TEMPORAL_TLS_*,
// as deployed workers do. .ci/postgres-e2e sets both for a PostgreSQL-backed
// server.
const (
	externalAddrEnv = "CUSTOS_E2E_TEMPORAL_ADDRESS"
	externalTLSEnv  = "CUSTOS_E2E_TEMPORAL_TLS_DIR"
)

// testServer is an embedded or an external server.
type testServer struct {
	addr  string
	certs devserver.TLSFiles
	tls   *tls.Config
}

func (s *testServer) FrontendAddr() string         { return s.addr }
func (s *testServer) ClientTLS() *tls.Config       { return s.tls.Clone() }
func (s *testServer) TLSFiles() devserver.TLSFiles { return s.certs }

func embedded(srv *devserver.Server) *testServer {
	return &testServer{addr: srv.FrontendAddr(), certs: srv.TLSFiles(), tls: srv.ClientTLS()}
}

// usingExternalServer reports whether the suite runs against an external
// server; tests that must control the server's own process skip in that
// mode only.
func usingExternalServer() bool { return os.Getenv(externalAddrEnv) != "" }

var externalOnce struct {
	sync.Once
	srv *testServer
	err error
}

// external is the external server, its certificates read once.
func external() (*testServer, error) {
	externalOnce.Do(func() {
		dir := os.Getenv(externalTLSEnv)
		if dir == "" {
			externalOnce.err = os.ErrNotExist
			return
		}
		certs := devserver.TLSFilesIn(dir)
		cfg, err := certs.ClientTLS()
		externalOnce.srv, externalOnce.err = &testServer{addr: os.Getenv(externalAddrEnv), certs: certs, tls: cfg}, err
	})
	return externalOnce.srv, externalOnce.err
}

// externalHint says what an unusable external server lacks.
const externalHint = "%s is set: %s must name the server's certificate directory"

// externalServer is the external server, or nil when none is configured.
// Workers in every test serve the same task queues on it, so whatever a
// test leaves running (a job waiting for approval, a job whose worker was
// killed) is terminated when the test ends: otherwise the next test's
// workers would pick it up and feed it the next test's model replies.
func externalServer(t *testing.T) *testServer {
	t.Helper()
	if !usingExternalServer() {
		return nil
	}
	srv, err := external()
	require.NoError(t, err, externalHint, externalAddrEnv, externalTLSEnv)
	t.Cleanup(func() { terminateOpen(t, srv) })
	return srv
}

// terminateOpen terminates every open job on srv's default namespace (not
// the server's own system workflows, such as worker deployments').
func terminateOpen(t *testing.T, srv *testServer) {
	c, err := client.Dial(testenv.ClientOptions(srv.addr, srv.ClientTLS()))
	if err != nil {
		t.Errorf("terminating leftover jobs: %v", err)
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: "ExecutionStatus = 'Running' AND WorkflowType = '" + jobapi.WorkflowName + "'", NextPageToken: token})
		if err != nil {
			t.Errorf("listing leftover jobs: %v", err)
			return
		}
		for _, e := range resp.Executions {
			if e.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				continue
			}
			err := c.TerminateWorkflow(ctx, e.Execution.WorkflowId, e.Execution.RunId, "e2e test "+t.Name()+" ended")
			if err != nil {
				t.Logf("terminating %s: %v", e.Execution.WorkflowId, err)
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return
		}
	}
}

// externalServerB is the external server for a benchmark.
func externalServerB(b *testing.B) *testServer {
	b.Helper()
	srv, err := external()
	require.NoError(b, err, externalHint, externalAddrEnv, externalTLSEnv)
	return srv
}
