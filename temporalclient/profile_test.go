package temporalclient

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testbin"
)

func TestWriteProfile(t *testing.T) {
	f := devserver.TLSFilesIn("/home/me/.local/state/custos/tls")
	p := EmbeddedProfile("127.0.0.1:7233", f)
	for _, tc := range []struct {
		name, old string
		err       string   // WriteProfile refuses: the file stays as it was
		keep      []string // lines of the old file still in the new one
	}{
		{name: "no file yet"},
		{name: "other profiles and their extra fields stay",
			old:  "[profile.default]\naddress = \"prod:7233\"\nnamespace = \"ns\"\nmy_field = \"kept\"\n\n[profile.default.tls]\nclient_cert_path = \"/c.pem\"\n",
			keep: []string{`address = "prod:7233"`, `my_field = "kept"`, `client_cert_path = "/c.pem"`}},
		{name: "an old custos profile is replaced whole",
			old: "[profile.custos]\naddress = \"old:1\"\nstale = true\n"},
		{name: "settings outside profiles are not dropped",
			old: "[other]\nx = 1\n", err: "add the profile by hand"},
		{name: "not TOML", old: "[profile\n", err: "not a Temporal CLI config file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "temporalio", "temporal.toml")
			if tc.old != "" {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, []byte(tc.old), 0o640))
			}
			err := WriteProfile(path, ProfileName, p)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				b, rerr := os.ReadFile(path)
				require.NoError(t, rerr)
				require.Equal(t, tc.old, string(b))
				return
			}
			require.NoError(t, err)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			for _, line := range tc.keep {
				require.Contains(t, string(b), line)
			}
			require.NotContains(t, string(b), "stale")
			require.NotContains(t, string(b), "old:1")
			info, err := os.Stat(path)
			require.NoError(t, err)
			want := os.FileMode(0o600)
			if tc.old != "" {
				want = 0o640 // the user's mode is kept
			}
			require.Equal(t, want, info.Mode().Perm())

			conf, err := envconfig.LoadClientConfig(envconfig.LoadClientConfigOptions{ConfigFilePath: path})
			require.NoError(t, err)
			got := conf.Profiles[ProfileName]
			require.NotNil(t, got)
			require.Equal(t, "127.0.0.1:7233", got.Address)
			require.Equal(t, f.ClientCert, got.TLS.ClientCertPath)
			require.Equal(t, f.ClientKey, got.TLS.ClientKeyPath)
			require.Equal(t, f.CA, got.TLS.ServerCACertPath)
			require.Equal(t, devserver.ServerName, got.TLS.ServerName)
		})
	}
}

// The profile and the TLS settings the temporalclient package derives reach a
// real embedded server: the Temporal CLI with the written profile (from its
// default config file), an SDK client with the profile as envconfig reads it
// back, Load with TEMPORAL_PROFILE, and an SDK client with EmbeddedTLS.
// Before the server has made certificates, EmbeddedTLS trusts no server at
// all.
func TestEmbeddedSettingsReachTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	cli := testbin.Temporal(t) // before HOME moves: GOPATH defaults to HOME/go
	state := t.TempDir()
	clearTemporalEnv(t, "", state) // "": the default config file
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tlsDir, err := devserver.DefaultTLSDir()
	require.NoError(t, err)
	untrusting, err := EmbeddedTLS()
	require.NoError(t, err)

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	srv, err := devserver.Start(ctx, devserver.Options{UIPort: -1, TLSDir: tlsDir, Logger: logger})
	require.NoError(t, err)
	defer func() { _ = srv.Stop() }()

	dial := func(tc *client.ConnectionOptions) error {
		c, err := Dial(ctx, client.Options{HostPort: srv.FrontendAddr(), ConnectionOptions: *tc}, 5*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}
	require.Error(t, dial(&client.ConnectionOptions{TLS: untrusting}), "settings made before the certificates trust nothing")
	owner, err := EmbeddedTLS()
	require.NoError(t, err)
	require.NoError(t, dial(&client.ConnectionOptions{TLS: owner}))

	require.NoError(t, WriteProfile(ProfileFile(), ProfileName, EmbeddedProfile(srv.FrontendAddr(), srv.TLSFiles())))
	require.Equal(t, filepath.Join(home, ".config", "temporalio", "temporal.toml"), ProfileFile())

	// What was written is what envconfig reads back, and it gets in.
	opts, err := envconfig.LoadClientOptions(envconfig.LoadClientOptionsRequest{ConfigFileProfile: ProfileName})
	require.NoError(t, err)
	require.Equal(t, srv.FrontendAddr(), opts.HostPort)
	require.Equal(t, "default", opts.Namespace)
	require.NoError(t, dial(&opts.ConnectionOptions), "envconfig's options from the written profile")
	// And so does custos, told the profile as the CLI is.
	t.Setenv("TEMPORAL_PROFILE", ProfileName)
	opts, set, err := Load(logger)
	require.NoError(t, err)
	require.True(t, set, "the profile names a server on another port than the default")
	require.Equal(t, srv.FrontendAddr(), opts.HostPort)
	require.NoError(t, dial(&opts.ConnectionOptions), "Load's options from TEMPORAL_PROFILE")
	require.NoError(t, os.Unsetenv("TEMPORAL_PROFILE"))
	cmd := exec.Command(cli, "--profile", ProfileName, "workflow", "list", "--command-timeout", "10s")
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "temporal --profile custos: %s", out)
	// The README's way: TEMPORAL_PROFILE once, then plain commands.
	cmd = exec.Command(cli, "workflow", "list", "--command-timeout", "10s")
	cmd.Env = append(os.Environ(), "HOME="+home, "TEMPORAL_PROFILE="+ProfileName)
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "TEMPORAL_PROFILE=custos temporal workflow list: %s", out)
	// The control: without the profile, the same command is refused.
	cmd = exec.Command(cli, "--address", srv.FrontendAddr(), "workflow", "list", "--command-timeout", "5s")
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err = cmd.CombinedOutput()
	require.Error(t, err, "without the profile: %s", out)
}
