package temporalclient

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/devserver"
)

// clearTemporalEnv unsets every TEMPORAL_* variable for the test (restored
// after it), points the profile file at path and the state directory at
// state, so neither the developer's shell nor their files count.
func clearTemporalEnv(t *testing.T, path, state string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "TEMPORAL_") {
			t.Setenv(k, "") // registers the restore
			require.NoError(t, os.Unsetenv(k))
		}
	}
	t.Setenv("TEMPORAL_CONFIG_FILE", path)
	t.Setenv("XDG_STATE_HOME", state)
}

// certsIn makes a real certificate set in dir.
func certsIn(t *testing.T, dir string) devserver.TLSFiles {
	t.Helper()
	f, err := devserver.EnsureCerts(dir, time.Now())
	require.NoError(t, err)
	return f
}

// tlsFrom is the TLS a client gets from f: its client certificate, trusting
// its CA.
type tlsFrom struct {
	files      devserver.TLSFiles
	serverName string
}

func checkTLS(t *testing.T, want *tlsFrom, got *tls.Config) {
	t.Helper()
	if want == nil {
		require.Nil(t, got)
		return
	}
	require.NotNil(t, got)
	require.Equal(t, want.serverName, got.ServerName)
	if want.files.ClientCert == "" {
		require.Empty(t, got.Certificates)
		require.Nil(t, got.RootCAs, "system roots")
		return
	}
	pair, err := tls.LoadX509KeyPair(want.files.ClientCert, want.files.ClientKey)
	require.NoError(t, err)
	require.Len(t, got.Certificates, 1)
	require.Equal(t, pair.Certificate, got.Certificates[0].Certificate)
	pem, err := os.ReadFile(want.files.CA)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	require.True(t, pool.Equal(got.RootCAs), "trusts exactly the CA in %s", want.files.CA)
}

// Environment variables and profile files → client options, as the Temporal
// CLI reads them; with no address, this user's embedded server.
func TestLoad(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "state") // XDG_STATE_HOME
	stateCerts := certsIn(t, filepath.Join(state, "custos", "tls"))
	other := certsIn(t, filepath.Join(base, "other")) // a real server's files
	expand := strings.NewReplacer(
		"$CERT", other.ClientCert, "$KEY", other.ClientKey, "$CA", other.CA,
		"$STATE_CERT", stateCerts.ClientCert, "$STATE_KEY", stateCerts.ClientKey, "$STATE_CA", stateCerts.CA,
	).Replace
	embeddedTLS := &tlsFrom{files: stateCerts, serverName: devserver.ServerName}
	otherTLS := &tlsFrom{files: other, serverName: "temporal.example"}
	// What `starter temporal-profile --write` writes.
	custosProfile, err := ProfileTOML(ProfileName, EmbeddedProfile(DefaultAddress, stateCerts))
	require.NoError(t, err)
	plainProfile := "[profile.default]\naddress = \"dev:7233\"\nnamespace = \"dev-ns\"\n"
	prodProfile := "[profile.default]\naddress = \"prod:7233\"\nnamespace = \"prod-ns\"\n\n[profile.default.tls]\n" +
		"client_cert_path = \"$CERT\"\nclient_key_path = \"$KEY\"\nserver_ca_cert_path = \"$CA\"\nserver_name = \"temporal.example\"\n" +
		"\n[profile.staging]\naddress = \"staging:7233\"\nnamespace = \"staging-ns\"\napi_key = \"staging-key\"\n"

	for _, tc := range []struct {
		name    string
		env     map[string]string
		profile string // the TOML file at TEMPORAL_CONFIG_FILE, if any

		set       bool
		host, ns  string
		tls       *tlsFrom
		tlsOff    bool // TLS explicitly disabled
		apiKey    bool
		authority string
		headers   map[string]string
		err       []string // all of these in the error
	}{
		{name: "nothing set: the embedded server, over mutual TLS",
			host: DefaultAddress, ns: "default", tls: embeddedTLS},
		{name: "address set and empty overrides the profile's: the embedded server",
			env: map[string]string{"TEMPORAL_ADDRESS": ""}, profile: plainProfile,
			host: DefaultAddress, ns: "dev-ns", tls: embeddedTLS},
		{name: "a profile address counts as set",
			profile: plainProfile,
			set:     true, host: "dev:7233", ns: "dev-ns"},
		{name: "address: plain connection, default namespace",
			env: map[string]string{"TEMPORAL_ADDRESS": "temporal:7233"},
			set: true, host: "temporal:7233", ns: "default"},
		{name: "address and namespace",
			env: map[string]string{"TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_NAMESPACE": "team"},
			set: true, host: "temporal:7233", ns: "team"},
		{name: "API key turns TLS on (system roots)",
			env: map[string]string{"TEMPORAL_ADDRESS": "ns.acct.tmprl.cloud:7233", "TEMPORAL_API_KEY": "secret"},
			set: true, host: "ns.acct.tmprl.cloud:7233", ns: "default", apiKey: true, tls: &tlsFrom{}},
		{name: "TLS file paths and server name",
			env: map[string]string{"TEMPORAL_ADDRESS": "temporal:7233",
				"TEMPORAL_TLS_CLIENT_CERT_PATH": "$CERT", "TEMPORAL_TLS_CLIENT_KEY_PATH": "$KEY",
				"TEMPORAL_TLS_SERVER_CA_CERT_PATH": "$CA", "TEMPORAL_TLS_SERVER_NAME": "temporal.example"},
			set: true, host: "temporal:7233", ns: "default", tls: otherTLS},
		{name: "TEMPORAL_TLS=true: TLS with system roots",
			env: map[string]string{"TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_TLS": "true"},
			set: true, host: "temporal:7233", ns: "default", tls: &tlsFrom{}},
		{name: "TEMPORAL_TLS=false turns the API key's TLS off",
			env: map[string]string{"TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_API_KEY": "k", "TEMPORAL_TLS": "false"},
			set: true, host: "temporal:7233", ns: "default", apiKey: true, tlsOff: true},
		{name: "authority and gRPC metadata",
			env: map[string]string{"TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_CLIENT_AUTHORITY": "front.example",
				"TEMPORAL_GRPC_META_X_TEAM": "infra"},
			set: true, host: "temporal:7233", ns: "default", authority: "front.example", headers: map[string]string{"x-team": "infra"}},
		{name: "the default profile of the config file",
			profile: prodProfile,
			set:     true, host: "prod:7233", ns: "prod-ns", tls: otherTLS},
		{name: "TEMPORAL_PROFILE picks another profile",
			env: map[string]string{"TEMPORAL_PROFILE": "staging"}, profile: prodProfile,
			set: true, host: "staging:7233", ns: "staging-ns", apiKey: true, tls: &tlsFrom{}},
		{name: "variables override the profile",
			env: map[string]string{"TEMPORAL_ADDRESS": "dr:7233", "TEMPORAL_NAMESPACE": "dr-ns"}, profile: prodProfile,
			set: true, host: "dr:7233", ns: "dr-ns", tls: otherTLS},
		{name: "the profile temporal-profile --write makes is the embedded server",
			env: map[string]string{"TEMPORAL_PROFILE": "custos"}, profile: custosProfile,
			host: DefaultAddress, ns: "default", tls: embeddedTLS},
		{name: "that profile on another address is a server like any other",
			env: map[string]string{"TEMPORAL_PROFILE": "custos", "TEMPORAL_ADDRESS": "127.0.0.1:17233"}, profile: custosProfile,
			set: true, host: "127.0.0.1:17233", ns: "default", tls: embeddedTLS},

		{name: "custos' old names are refused, naming the new ones",
			env: map[string]string{"TEMPORAL_ADDRESS": "temporal:7233",
				"TEMPORAL_TLS_CERT": "$CERT", "TEMPORAL_TLS_KEY": "$KEY", "TEMPORAL_TLS_CA": "$CA"},
			err: []string{"TEMPORAL_TLS_CERT is not read: set TEMPORAL_TLS_CLIENT_CERT_PATH",
				"TEMPORAL_TLS_KEY is not read: set TEMPORAL_TLS_CLIENT_KEY_PATH",
				"TEMPORAL_TLS_CA is not read: set TEMPORAL_TLS_SERVER_CA_CERT_PATH"}},
		{name: "an old name alone is refused too, even beside the new one",
			env: map[string]string{"TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_TLS_CLIENT_CERT_PATH": "$CERT",
				"TEMPORAL_TLS_CLIENT_KEY_PATH": "$KEY", "TEMPORAL_TLS_CA": "$CA"},
			err: []string{"TEMPORAL_TLS_CA is not read: set TEMPORAL_TLS_SERVER_CA_CERT_PATH"}},
		{name: "the CLI's legacy _DATA names are refused",
			env: map[string]string{"TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_TLS_CA_DATA": "-----BEGIN"},
			err: []string{"TEMPORAL_TLS_CA_DATA is not read: set TEMPORAL_TLS_SERVER_CA_CERT_DATA"}},
		{name: "a boolean envconfig cannot read",
			env: map[string]string{"TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_TLS": "yes"},
			err: []string{`TEMPORAL_TLS="yes": want true or false`}},
		{name: "TLS files but no address",
			env: map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": "$CERT", "TEMPORAL_TLS_CLIENT_KEY_PATH": "$KEY"},
			err: []string{"TLS settings or an API key but no address", "set TEMPORAL_ADDRESS"}},
		{name: "the address emptied but the profile's TLS kept",
			env: map[string]string{"TEMPORAL_ADDRESS": ""}, profile: prodProfile,
			err: []string{"TLS settings or an API key but no address"}},
		{name: "an API key but no address",
			env: map[string]string{"TEMPORAL_API_KEY": "k"},
			err: []string{"TLS settings or an API key but no address"}},
		{name: "a profile that is not there",
			env: map[string]string{"TEMPORAL_PROFILE": "nope"}, profile: prodProfile,
			err: []string{`profile "nope" of `, "unable to find profile nope"}},
		{name: "a config file that is not TOML",
			profile: "[profile.default\n",
			err:     []string{"failed parsing config"}},
		{name: "a certificate file that is not there",
			env: map[string]string{"TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_TLS_CLIENT_CERT_PATH": "/nonexistent/c.pem",
				"TEMPORAL_TLS_CLIENT_KEY_PATH": "$KEY"},
			err: []string{"failed loading client cert/key path", "/nonexistent/c.pem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "temporal.toml")
			clearTemporalEnv(t, path, state)
			if tc.profile != "" {
				require.NoError(t, os.WriteFile(path, []byte(expand(tc.profile)), 0o600))
			}
			for k, v := range tc.env {
				t.Setenv(k, expand(v))
			}
			opts, set, err := Load(nil)
			if tc.err != nil {
				require.Error(t, err)
				for _, s := range tc.err {
					require.ErrorContains(t, err, s)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.set, set, "set")
			require.Equal(t, tc.host, opts.HostPort)
			require.Equal(t, tc.ns, opts.Namespace)
			require.Equal(t, tc.tlsOff, opts.ConnectionOptions.TLSDisabled, "TLS disabled")
			checkTLS(t, tc.tls, opts.ConnectionOptions.TLS)
			require.Equal(t, tc.apiKey, opts.Credentials != nil, "API key credentials")
			require.Equal(t, tc.authority, opts.ConnectionOptions.Authority)
			if tc.headers == nil {
				require.Nil(t, opts.HeadersProvider)
			} else {
				require.NotNil(t, opts.HeadersProvider)
				h, err := opts.HeadersProvider.GetHeaders(t.Context())
				require.NoError(t, err)
				require.Equal(t, tc.headers, h)
			}
		})
	}
}

// Before the embedded server has made its certificates, the options for it
// trust no server at all: nothing on DefaultAddress is taken for it.
func TestLoadBeforeTheEmbeddedServerHasRun(t *testing.T) {
	state := t.TempDir()
	clearTemporalEnv(t, filepath.Join(t.TempDir(), "temporal.toml"), state)
	opts, set, err := Load(nil)
	require.NoError(t, err)
	require.False(t, set)
	require.Equal(t, DefaultAddress, opts.HostPort)
	require.Equal(t, "default", opts.Namespace)
	tc := opts.ConnectionOptions.TLS
	require.NotNil(t, tc)
	require.Empty(t, tc.Certificates)
	require.True(t, x509.NewCertPool().Equal(tc.RootCAs), "an empty pool, not the system roots")
	require.Equal(t, devserver.ServerName, tc.ServerName)
	_, err = os.Stat(filepath.Join(state, "custos"))
	require.ErrorIs(t, err, os.ErrNotExist, "loading options makes no state")
}
