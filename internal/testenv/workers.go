package testenv

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// The scripted model needs a key and a model name, like any endpoint; it
// checks neither.
const (
	modelAPIKey = "k"
	modelName   = "fake"
)

// StartModel starts a scripted model on a free loopback port and closes it
// when the test ends. It returns the server (its Requests are what the
// workers sent) and its base URL.
func StartModel(t testing.TB, h demomodel.Handler) (*demomodel.Server, string) {
	t.Helper()
	srv := demomodel.New(h)
	base, err := srv.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv, base
}

// StartConcurrentModel is StartModel with a server that answers several
// requests at once (demomodel.NewConcurrent), each after its own delays.
func StartConcurrentModel(t testing.TB, h demomodel.Handler) (*demomodel.Server, string) {
	t.Helper()
	srv := demomodel.NewConcurrent(h)
	base, err := srv.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv, base
}

// ModelEnv points a worker process at the model at base, as
// WorkerOptions points in-process workers.
func ModelEnv(base string) []string {
	return []string{"OPENAI_BASE_URL=" + base, "OPENAI_API_KEY=" + modelAPIKey, "OPENAI_MODEL=" + modelName}
}

// WorkerOptions are o with the model at base and, where o leaves them
// empty, Logger for the logger and StateDir for the state directory.
func WorkerOptions(base string, o app.Options) app.Options {
	o.BaseURL, o.APIKey, o.Model = base, modelAPIKey, modelName
	if o.Logger == nil {
		o.Logger = Logger()
	}
	if o.StateDir == "" {
		o.StateDir = StateDir()
	}
	return o
}

var stateDir = sync.OnceValue(func() string {
	d, err := os.MkdirTemp("", "custos-test-state-")
	if err != nil {
		panic(fmt.Sprintf("testenv: state dir: %v", err))
	}
	return d
})

// StateDir is the state directory of this test process's in-process
// workers (jobs' transcripts and audits), one for the whole process so a
// job keeps its files across the workers a test restarts, and none of them
// lands in the user's own state directory.
func StateDir() string { return stateDir() }

// JobFiles are where a job's transcript and audit are, as its status says.
func JobFiles(t testing.TB, c client.Client, id string) api.JobFiles {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := c.QueryWorkflow(ctx, id, "", jobapi.StatusQuery)
	require.NoError(t, err, "status of %s", id)
	var st jobapi.Status
	require.NoError(t, v.Get(&st))
	return st.Files.Or(st.Workspace, id)
}

// StartWorkers starts custos workers on c with the model at base (see
// WorkerOptions; a UserConfigDir of their own unless o names one) and stops
// them when the test ends; a test may stop them sooner.
func StartWorkers(t testing.TB, c client.Client, base string, o app.Options) *app.Workers {
	t.Helper()
	if o.UserConfigDir == "" {
		o.UserConfigDir = t.TempDir()
	}
	w, err := app.Start(c, WorkerOptions(base, o))
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return w
}

// ToolResult is the last result for callID that the model was sent.
func ToolResult(model *demomodel.Server, callID string) string {
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
