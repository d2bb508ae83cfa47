package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
)

// `starter temporal-profile` prints the Temporal CLI flags for the user's
// embedded server (the files in the state directory) and writes them as a
// profile; before the server has made certificates it says how to get them.
// `starter ui-url` wants a UI that has run.
func TestTemporalProfileCommand(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	ctx := context.Background()

	code, _, errOut := runApp(t, ctx, "temporal-profile")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no certificates in "+filepath.Join(state, "custos", "tls"))
	assert.Contains(t, errOut, "go run ./worker")

	f, err := devserver.EnsureCerts(filepath.Join(state, "custos", "tls"), time.Now())
	require.NoError(t, err)
	code, out, errOut := runApp(t, ctx, "temporal-profile")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "temporal workflow list "+strings.Join(f.TemporalCLIFlags("127.0.0.1:7233"), " "))
	assert.Contains(t, out, "[profile.custos]")

	file := filepath.Join(t.TempDir(), "temporal.toml")
	code, out, errOut = runApp(t, ctx, "temporal-profile", "--write", "--config-file", file)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "temporal --profile custos workflow list")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(b), `client_key_path = "`+f.ClientKey+`"`)

	code, _, errOut = runApp(t, ctx, "temporal-profile", "extra")
	assert.Equal(t, 2, code, errOut)

	code, _, errOut = runApp(t, ctx, "ui-url")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no Web UI has run")
}

// What `starter temporal-profile --write` writes is what envconfig reads
// back: an SDK client from it gets into the server, and so do custos'
// commands told only TEMPORAL_PROFILE, as the Temporal CLI is.
func TestTemporalProfileWrittenIsReadBack(t *testing.T) {
	const task = "cli test: a job started through the Temporal CLI profile"
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "p.txt", "content": "x\n"})),
		demomodel.Say("done"),
	))
	// This user's embedded server, as temporal-profile finds it: the shared
	// server's certificates in the state directory.
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	require.NoError(t, os.MkdirAll(filepath.Join(state, "custos"), 0o700))
	require.NoError(t, os.Symlink(shared.env.Server.TLSFiles().Dir, filepath.Join(state, "custos", "tls")))
	ctx := context.Background()

	file := filepath.Join(t.TempDir(), "temporalio", "temporal.toml")
	code, _, errOut := runApp(t, ctx, "temporal-profile", "--write", "--config-file", file, "--address", shared.env.Server.FrontendAddr())
	require.Equal(t, 0, code, errOut)

	opts, err := envconfig.LoadClientOptions(envconfig.LoadClientOptionsRequest{ConfigFilePath: file, ConfigFileProfile: "custos"})
	require.NoError(t, err)
	require.Equal(t, shared.env.Server.FrontendAddr(), opts.HostPort)
	opts.Logger = testenv.TemporalLogger()
	pc, err := client.Dial(opts)
	require.NoError(t, err, "an SDK client from the written profile")
	_, err = pc.CheckHealth(ctx, &client.CheckHealthRequest{})
	pc.Close()
	require.NoError(t, err)

	// custos' own commands, with the profile and no TEMPORAL_ADDRESS or
	// TLS variables.
	for _, k := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_SERVER_NAME"} {
		require.NoError(t, os.Unsetenv(k)) // jobEnv's t.Setenv restores them
	}
	t.Setenv("TEMPORAL_CONFIG_FILE", file)
	t.Setenv("TEMPORAL_PROFILE", "custos")
	id := startDetached(t, testenv.Workspace(t), task)
	testenv.WaitPending(t, c, id, "w1", pendingWait)
	code, out, errOut := runApp(t, ctx, "status", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "pending:   w1: Write p.txt")
	code, _, errOut = runApp(t, ctx, "cancel", id)
	require.Equal(t, 0, code, errOut)
}
