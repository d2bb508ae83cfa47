package cli_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/workflows"
)

func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	code := m.Run()
	shared.stop()
	os.Exit(code)
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// env is one embedded Temporal server with one custos worker and one fake
// model, shared by the job tests of this package (a server takes seconds to
// start). Jobs are told apart by their task: each test registers a script for
// its own task text with scriptFor.
type env struct {
	once    sync.Once
	err     error
	dir     string
	srv     *devserver.Server
	model   *demomodel.Server
	workers *app.Workers
	client  client.Client

	mu      sync.Mutex
	scripts map[string]demomodel.Handler
}

var shared = &env{scripts: map[string]demomodel.Handler{}}

// route answers a request with the script registered for its task (the
// first user message).
func (e *env) route(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	task := ""
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleUser {
			task = m.Content
			break
		}
	}
	e.mu.Lock()
	h := e.scripts[task]
	e.mu.Unlock()
	if h == nil {
		return demomodel.Fail(http.StatusBadRequest, fmt.Sprintf("cli test: no script for task %q", task)), nil
	}
	return h(req)
}

func (e *env) start() error {
	dir, err := os.MkdirTemp("", "custos-cli-test-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	e.dir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.srv, err = devserver.Start(ctx, devserver.Options{DBFile: filepath.Join(dir, "temporal.db"), Port: 0, UIPort: -1, Logger: quietLogger()})
	if err != nil {
		return fmt.Errorf("start devserver: %w", err)
	}
	e.model = demomodel.New(e.route)
	base, err := e.model.Start("127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("start fake model: %w", err)
	}
	e.client, err = client.Dial(client.Options{HostPort: e.srv.FrontendAddr(), Logger: tlog.NewStructuredLogger(quietLogger()),
		ConnectionOptions: client.ConnectionOptions{TLS: e.srv.ClientTLS()}})
	if err != nil {
		return fmt.Errorf("dial %s: %w", e.srv.FrontendAddr(), err)
	}
	userConfig := filepath.Join(dir, "config")
	if err := os.MkdirAll(userConfig, 0o755); err != nil {
		return fmt.Errorf("config dir: %w", err)
	}
	e.workers, err = app.Start(e.client, app.Options{BaseURL: base, APIKey: "k", Model: "fake", UserConfigDir: userConfig, Logger: quietLogger()})
	if err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	return nil
}

func (e *env) stop() {
	if e.workers != nil {
		e.workers.Stop()
	}
	if e.client != nil {
		e.client.Close()
	}
	if e.model != nil {
		e.model.Close()
	}
	if e.srv != nil {
		e.srv.Stop()
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
	}
}

// jobEnv starts the shared server once, points TEMPORAL_ADDRESS at it for
// this test and registers script as the model for task.
func jobEnv(t *testing.T, task string, script demomodel.Handler) client.Client {
	t.Helper()
	shared.once.Do(func() { shared.err = shared.start() })
	require.NoError(t, shared.err)
	// No profile of the developer's Temporal CLI config counts.
	t.Setenv("TEMPORAL_CONFIG_FILE", filepath.Join(t.TempDir(), "no-temporal.toml"))
	t.Setenv("TEMPORAL_PROFILE", "")
	t.Setenv("TEMPORAL_ADDRESS", shared.srv.FrontendAddr())
	t.Setenv("TEMPORAL_NAMESPACE", "")
	t.Setenv("TEMPORAL_API_KEY", "")
	// The embedded server wants its owner's client certificate.
	certs := shared.srv.TLSFiles()
	t.Setenv("TEMPORAL_TLS", "")
	t.Setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", certs.ClientCert)
	t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", certs.ClientKey)
	t.Setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", certs.CA)
	t.Setenv("TEMPORAL_TLS_SERVER_NAME", devserver.ServerName)
	shared.mu.Lock()
	shared.scripts[task] = script
	shared.mu.Unlock()
	return shared.client
}

func queryStatus(t *testing.T, c client.Client, id string) (workflows.Status, error) {
	t.Helper()
	var st workflows.Status
	v, err := c.QueryWorkflow(context.Background(), id, "", workflows.StatusQuery)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

// waitPending polls the status query until callID is pending.
func waitPending(t *testing.T, c client.Client, id, callID string) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := queryStatus(t, c, id)
		if err != nil {
			return false
		}
		for _, p := range st.Pending {
			if p.CallID == callID {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "call %s of %s never became pending", callID, id)
}

func auditOf(t *testing.T, c client.Client, id string) []approval.AuditRecord {
	t.Helper()
	v, err := c.QueryWorkflow(context.Background(), id, "", workflows.AuditQuery)
	require.NoError(t, err)
	var recs []approval.AuditRecord
	require.NoError(t, v.Get(&recs))
	return recs
}

// decisions maps call ID to its decision record (signals and other events
// left out).
func decisions(recs []approval.AuditRecord) map[string]approval.AuditRecord {
	out := map[string]approval.AuditRecord{}
	for _, r := range recs {
		if r.Event == "" {
			out[r.CallID] = r
		}
	}
	return out
}

func jobResult(t *testing.T, c client.Client, id string) (workflows.JobResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var res workflows.JobResult
	err := c.GetWorkflow(ctx, id, "").Get(ctx, &res)
	return res, err
}
