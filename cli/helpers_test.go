package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/cli"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/sandbox/hostfs"
)

func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	// What the commands under test keep (sandbox exec's workspace caches,
	// answer keys) goes to a state directory of this process, never the
	// user's.
	state, err := os.MkdirTemp("", "custos-cli-test-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	shared.env.Stop()
	// go leaves module directories read-only.
	_ = hostfs.RemoveAllWritable(state)
	os.Exit(code)
}

// shared is one environment (server, worker, model) for the job tests of
// this package (a server takes seconds to start). Jobs are told apart by
// their task: each test registers a script for its own task text with
// jobEnv.
var shared = struct {
	once sync.Once
	env  *testenv.Env
	err  error

	mu      sync.Mutex
	scripts map[string]demomodel.Handler
}{scripts: map[string]demomodel.Handler{}}

// route answers a request with the script registered for its task (the
// first user message).
func route(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	task := ""
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleUser {
			task = m.Content
			break
		}
	}
	shared.mu.Lock()
	h := shared.scripts[task]
	shared.mu.Unlock()
	if h == nil {
		return demomodel.Fail(http.StatusBadRequest, fmt.Sprintf("cli test: no script for task %q", task)), nil
	}
	return h(req)
}

// jobEnv starts the shared environment once, points TEMPORAL_ADDRESS at its
// server for this test and registers script as the model for task.
func jobEnv(t *testing.T, task string, script demomodel.Handler) client.Client {
	t.Helper()
	shared.once.Do(func() { shared.env, shared.err = testenv.StartEnv(route) })
	require.NoError(t, shared.err)
	srv := shared.env.Server
	// No profile of the developer's Temporal CLI config counts.
	t.Setenv("TEMPORAL_CONFIG_FILE", filepath.Join(t.TempDir(), "no-temporal.toml"))
	t.Setenv("TEMPORAL_PROFILE", "")
	t.Setenv("TEMPORAL_ADDRESS", srv.FrontendAddr())
	t.Setenv("TEMPORAL_NAMESPACE", "")
	t.Setenv("TEMPORAL_API_KEY", "")
	// The embedded server wants its owner's client certificate.
	certs := srv.TLSFiles()
	t.Setenv("TEMPORAL_TLS", "")
	t.Setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", certs.ClientCert)
	t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", certs.ClientKey)
	t.Setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", certs.CA)
	t.Setenv("TEMPORAL_TLS_SERVER_NAME", devserver.ServerName)
	shared.mu.Lock()
	shared.scripts[task] = script
	shared.mu.Unlock()
	return shared.env.Client
}

// runApp runs one command and returns its exit code, stdout and stderr.
func runApp(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := (&cli.App{Stdout: &out, Stderr: &errb, Logger: testenv.Logger()}).Main(ctx, args)
	return code, out.String(), errb.String()
}

// pendingWait is how long a call may take to be waiting for a person.
const pendingWait = 30 * time.Second
