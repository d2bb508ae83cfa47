package embeddedcmd_test

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

	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/cli/embeddedcmd"
	"github.com/custos-dev/custos/devserver"
)

// runApp runs `starter temporal-profile|ui-url ARGS` as starter does (cli
// hands them to embeddedcmd and ends as cmdline.Exit does): the exit code,
// stdout and stderr.
func runApp(t *testing.T, _ context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := embeddedcmd.Env{Stdout: &out, Stderr: &errb}
	var err error
	switch args[0] {
	case "temporal-profile":
		err = e.TemporalProfile(args[1:])
	case "ui-url":
		err = e.LoginURL("ui-url", "/", args[1:])
	default:
		t.Fatalf("%q is not a command of embeddedcmd", args)
	}
	return cmdline.Exit(&errb, err), out.String(), errb.String()
}

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
