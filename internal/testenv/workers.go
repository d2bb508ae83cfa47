package testenv

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
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

// ModelEnv points a worker process at the model at base, as
// WorkerOptions points in-process workers.
func ModelEnv(base string) []string {
	return []string{"OPENAI_BASE_URL=" + base, "OPENAI_API_KEY=" + modelAPIKey, "OPENAI_MODEL=" + modelName}
}

// WorkerOptions are o with the model at base and, where o leaves them
// empty, Logger for the logger.
func WorkerOptions(base string, o app.Options) app.Options {
	o.BaseURL, o.APIKey, o.Model = base, modelAPIKey, modelName
	if o.Logger == nil {
		o.Logger = Logger()
	}
	return o
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
