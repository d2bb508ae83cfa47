package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
)

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
