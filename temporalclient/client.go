// Package temporalclient gives custos' commands a Temporal client: the server
// the Temporal CLI's configuration names (TEMPORAL_* variables and profile
// files, read by go.temporal.io/sdk/contrib/envconfig), or this user's
// embedded server, started in-process when none runs.
package temporalclient

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	tlog "go.temporal.io/sdk/log"

	"github.com/custos-dev/custos/devserver"
)

// DefaultAddress is where the embedded server listens, and where a command
// looks first when no address is configured.
const DefaultAddress = "127.0.0.1:7233"

// renamed are the legacy TLS variables, which envconfig does not read, with
// the names it reads for the same settings. custos read the first three
// itself once; the Temporal CLI still takes all six as undocumented
// overrides. Load refuses them rather than drop a TLS setting.
var renamed = []struct{ old, now string }{
	{"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_CLIENT_CERT_PATH"},
	{"TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CLIENT_KEY_PATH"},
	{"TEMPORAL_TLS_CA", "TEMPORAL_TLS_SERVER_CA_CERT_PATH"},
	{"TEMPORAL_TLS_CERT_DATA", "TEMPORAL_TLS_CLIENT_CERT_DATA"},
	{"TEMPORAL_TLS_KEY_DATA", "TEMPORAL_TLS_CLIENT_KEY_DATA"},
	{"TEMPORAL_TLS_CA_DATA", "TEMPORAL_TLS_SERVER_CA_CERT_DATA"},
}

// Load builds client options as the Temporal CLI does, with envconfig: the
// profile TEMPORAL_PROFILE (default "default", which may be absent) of the
// TOML file TEMPORAL_CONFIG_FILE (default
// $XDG_CONFIG_HOME/temporalio/temporal.toml), then the TEMPORAL_* variables
// over it (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
// TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH/_DATA,
// TEMPORAL_TLS_CLIENT_KEY_PATH/_DATA, TEMPORAL_TLS_SERVER_CA_CERT_PATH/_DATA,
// TEMPORAL_TLS_SERVER_NAME, TEMPORAL_TLS_DISABLE_HOST_VERIFICATION,
// TEMPORAL_CLIENT_AUTHORITY, TEMPORAL_GRPC_META_*). A variable set but empty
// overrides the profile too: TEMPORAL_ADDRESS= means no address.
//
// set reports whether that names a server: an address, from
// TEMPORAL_ADDRESS or the profile. With none, the target is this user's
// embedded server on DefaultAddress, always over mutual TLS with the
// certificates in its state directory (see EmbeddedTLS): whatever else
// answers there, another user's server included, fails the handshake. The
// profile `starter temporal-profile --write` makes (DefaultAddress and the
// embedded server's client certificate) names that same server, so it
// counts as no address too: the worker starts the embedded server rather
// than wait for it.
//
// Load refuses, rather than silently drop: the legacy names
// TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY, TEMPORAL_TLS_CA (custos' old names) and
// their _DATA forms, naming the variable to use instead; TLS settings or an
// API key with no address (the embedded server has its own certificates);
// and boolean variables that are neither true nor false.
func Load(logger *slog.Logger) (opts client.Options, set bool, err error) {
	if opts, set, err = load(); err != nil {
		return client.Options{}, false, err
	}
	if logger != nil {
		opts.Logger = tlog.NewStructuredLogger(logger)
	}
	return opts, set, nil
}

func load() (client.Options, bool, error) {
	if err := checkEnv(); err != nil {
		return client.Options{}, false, err
	}
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{})
	if err != nil {
		return client.Options{}, false, fmt.Errorf("temporal client config (%s): %w", describeSource(), err)
	}
	embedded := prof.Address == "" || isEmbeddedProfile(&prof)
	if prof.Address == "" && (tlsConfigured(prof.TLS) || prof.APIKey != "") {
		return client.Options{}, false, fmt.Errorf("temporal client config (%s): TLS settings or an API key but no address; "+
			"with no address custos uses your embedded server, which has its own certificates: set TEMPORAL_ADDRESS "+
			"(%s for another server on the default port) or unset the TLS and API key settings", describeSource(), DefaultAddress)
	}
	if embedded {
		prof.Address, prof.TLS, prof.APIKey = DefaultAddress, nil, ""
	}
	opts, err := prof.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, false, fmt.Errorf("temporal client config (%s): %w", describeSource(), err)
	}
	opts.Namespace = cmp.Or(opts.Namespace, "default")
	if embedded {
		if opts.ConnectionOptions.TLS, err = EmbeddedTLS(); err != nil {
			return client.Options{}, false, err
		}
	}
	return opts, !embedded, nil
}

// isEmbeddedProfile reports whether p is the profile EmbeddedProfile makes
// for this user's embedded server on DefaultAddress.
func isEmbeddedProfile(p *envconfig.ClientConfigProfile) bool {
	if p.Address != DefaultAddress || p.TLS == nil {
		return false
	}
	dir, err := devserver.DefaultTLSDir()
	if err != nil {
		return false
	}
	f := devserver.TLSFilesIn(dir)
	return p.TLS.ClientCertPath == f.ClientCert && p.TLS.ClientKeyPath == f.ClientKey
}

// tlsConfigured reports whether t holds any TLS setting (a variable set to
// the empty string makes an empty one).
func tlsConfigured(t *envconfig.ClientConfigTLS) bool {
	return t != nil && (t.Disabled || t.ClientCertPath != "" || len(t.ClientCertData) > 0 ||
		t.ClientKeyPath != "" || len(t.ClientKeyData) > 0 || t.ServerCACertPath != "" ||
		len(t.ServerCACertData) > 0 || t.ServerName != "" || t.DisableHostVerification)
}

// checkEnv refuses what envconfig would silently ignore: custos' old
// variable names and booleans it cannot read.
func checkEnv() error {
	var errs []error
	for _, r := range renamed {
		if os.Getenv(r.old) != "" {
			errs = append(errs, fmt.Errorf("%s is not read: set %s instead (the name the Temporal CLI documents)", r.old, r.now))
		}
	}
	for _, name := range []string{"TEMPORAL_TLS", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"} {
		switch v := os.Getenv(name); strings.ToLower(v) {
		case "", "1", "0", "true", "false":
		default:
			errs = append(errs, fmt.Errorf("%s=%q: want true or false (or 1 or 0)", name, v))
		}
	}
	return errors.Join(errs...)
}

// describeSource names where Load read its settings, for error messages.
func describeSource() string {
	profile := cmp.Or(os.Getenv("TEMPORAL_PROFILE"), envconfig.DefaultConfigFileProfile)
	return fmt.Sprintf("profile %q of %s, then TEMPORAL_* variables", profile, cmp.Or(ProfileFile(), "no config file"))
}

// EmbeddedTLS is the client TLS configuration for this user's embedded
// server: the certificates in devserver.DefaultTLSDir. Before the server has
// made them it trusts no server at all, so nothing on DefaultAddress is
// mistaken for ours.
func EmbeddedTLS() (*tls.Config, error) {
	dir, err := devserver.DefaultTLSDir()
	if err != nil {
		return nil, err
	}
	f := devserver.TLSFilesIn(dir)
	if _, err := os.Stat(f.ClientKey); errors.Is(err, fs.ErrNotExist) {
		return &tls.Config{RootCAs: x509.NewCertPool(), ServerName: devserver.ServerName, MinVersion: tls.VersionTLS12}, nil
	}
	tc, err := f.ClientTLS()
	if err != nil {
		return nil, fmt.Errorf("embedded server certificates in %s: %w", dir, err)
	}
	return tc, nil
}

// Dial connects with a bounded wait, so "is a server there?" has a quick answer.
func Dial(ctx context.Context, opts client.Options, wait time.Duration) (client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s: %w", opts.HostPort, err)
	}
	return c, nil
}

// Embedded is an in-process Temporal server and a client on it.
type Embedded struct {
	Server *devserver.Server
	Client client.Client
	// InboxURL is the one-time link to the approval inbox the worker
	// mounted on the server's Web UI address; "" when none is.
	InboxURL string
}

// StartEmbedded starts the embedded server (SQLite in the user's state
// directory unless o.DBFile says otherwise) and connects to it.
func StartEmbedded(ctx context.Context, o devserver.Options, logger *slog.Logger) (*Embedded, error) {
	if o.DBFile == "" {
		f, err := devserver.DefaultDBFile()
		if err != nil {
			return nil, err
		}
		o.DBFile = f
	}
	srv, err := devserver.Start(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("start embedded Temporal server: %w", err)
	}
	opts := client.Options{
		HostPort:          srv.FrontendAddr(),
		Namespace:         cmp.Or(o.Namespace, "default"),
		ConnectionOptions: client.ConnectionOptions{TLS: srv.ClientTLS()},
	}
	if logger != nil {
		opts.Logger = tlog.NewStructuredLogger(logger)
	}
	c, err := Dial(ctx, opts, 30*time.Second)
	if err != nil {
		srv.Stop()
		return nil, err
	}
	return &Embedded{Server: srv, Client: c}, nil
}

// Close closes the client and stops the server.
func (e *Embedded) Close() {
	e.Client.Close()
	e.Server.Stop()
}
