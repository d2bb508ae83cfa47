// Package e2e runs custos end to end: the real embedded Temporal server, real
// workers (in-process or as a separate process), a real HTTP server speaking
// the OpenAI protocol, real files and the real sandbox.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// binDirs are temp dirs of binaries built for the tests, removed at the end.
var binDirs []string

// builtBinary is one package of the module, compiled once per test binary
// run (buildBinary).
type builtBinary struct {
	once sync.Once
	path string
	err  error
}

var (
	binsMu sync.Mutex
	bins   = map[string]*builtBinary{}
)

// buildBinary compiles the package at pkg (relative to e2e/) as name, once
// per test binary run, and returns the binary's path.
func buildBinary(t testing.TB, pkg, name string) string {
	t.Helper()
	binsMu.Lock()
	b := bins[pkg]
	if b == nil {
		b = &builtBinary{}
		bins[pkg] = b
	}
	binsMu.Unlock()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "custos-e2e-")
		if err != nil {
			b.err = err
			return
		}
		binsMu.Lock()
		binDirs = append(binDirs, dir)
		binsMu.Unlock()
		b.path = filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", b.path, pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		b.err = cmd.Run()
	})
	require.NoError(t, b.err, "build %s", pkg)
	return b.path
}

func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	code := m.Run()
	for _, d := range binDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// startServer gives the test a Temporal server: the embedded one on free
// ports with its SQLite file in dbFile ("" = a new temp file), or, when
// CUSTOS_E2E_TEMPORAL_ADDRESS is set, the external server there (see
// external_test.go), which the test then shares with the others.
func startServer(t *testing.T, dbFile string) *testServer {
	t.Helper()
	if ext := externalServer(t); ext != nil {
		return ext
	}
	if dbFile == "" {
		dbFile = filepath.Join(t.TempDir(), "temporal.db")
	}
	return embedded(testenv.StartServer(t, devserver.Options{DBFile: dbFile, UIPort: -1}))
}

// startWaitingJob serves script with in-process workers on c, starts job id
// in a new workspace and returns once its call callID waits for a person.
func startWaitingJob(t *testing.T, c client.Client, id string, script demomodel.Handler, callID string) (client.WorkflowRun, string) {
	t.Helper()
	_, base := testenv.StartModel(t, script)
	testenv.StartWorkers(t, c, base, app.Options{})
	ws := testenv.Workspace(t)
	run := testenv.StartJob(t, c, id, jobapi.JobInput{Once: true, Task: "write it", Workspace: ws, ApprovalTimeout: 10 * time.Minute})
	testenv.WaitPending(t, c, run.GetID(), callID, pendingWait)
	return run, ws
}

// pendingWait is how long a call may take to be waiting for a person (a
// worker process may be starting, the server may be an external one). Jobs
// whose calls a test waits for get a deadline well past it (10 minutes):
// with the default 60 s, a call first seen late on a loaded machine would
// already be denied by its timer.
const pendingWait = 90 * time.Second

// tlsEnv points a worker process at srv through the TEMPORAL_TLS_* variables.
func tlsEnv(srv testenv.Server) []string {
	f := srv.TLSFiles()
	return []string{"TEMPORAL_TLS_CLIENT_CERT_PATH=" + f.ClientCert, "TEMPORAL_TLS_CLIENT_KEY_PATH=" + f.ClientKey,
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH=" + f.CA, "TEMPORAL_TLS_SERVER_NAME=" + devserver.ServerName}
}

// benchCallID is the ID of a benchmark job's i-th call (writesThenDone).
func benchCallID(i int) string { return fmt.Sprintf("c%03d", i) }

// writesThenDone is the model of the approval benchmarks: one Write per
// turn (call benchCallID(i) writes fI.txt) until n calls have results, then
// done.
func writesThenDone(n int) demomodel.Handler {
	return func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		turn := 0
		for _, m := range req.Messages {
			if m.Role == openai.ChatMessageRoleTool {
				turn++
			}
		}
		if turn >= n {
			return demomodel.Say("done"), nil
		}
		return demomodel.Calls(demomodel.ToolCall(benchCallID(turn), "Write",
			map[string]any{"file_path": fmt.Sprintf("f%03d.txt", turn), "content": "x\n"})), nil
	}
}
