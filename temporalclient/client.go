// Package temporalclient gives custos' commands a Temporal client: the server named by
// the usual TEMPORAL_* variables, or an embedded one started in-process.
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
	tlog "go.temporal.io/sdk/log"

	"github.com/custos-dev/custos/devserver"
)

// DefaultAddress is where the embedded server listens, and where a command
// looks first when TEMPORAL_ADDRESS is unset.
const DefaultAddress = "127.0.0.1:7233"

// FromEnv builds client options from TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY,
// TEMPORAL_TLS_CA and TEMPORAL_TLS_SERVER_NAME. set reports whether
// TEMPORAL_ADDRESS was given.
//
// With TEMPORAL_ADDRESS unset (and no TEMPORAL_TLS* or API key) the target is
// this user's embedded server on DefaultAddress, always over mutual TLS with
// the certificates in its state directory (see EmbeddedTLS): whatever else
// answers there, another user's server included, fails the handshake.
func FromEnv(logger *slog.Logger) (opts client.Options, set bool, err error) {
	opts.HostPort = os.Getenv("TEMPORAL_ADDRESS")
	set = opts.HostPort != ""
	if !set {
		opts.HostPort = DefaultAddress
	}
	opts.Namespace = os.Getenv("TEMPORAL_NAMESPACE")
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if logger != nil {
		opts.Logger = tlog.NewStructuredLogger(logger)
	}
	if key := os.Getenv("TEMPORAL_API_KEY"); key != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(key)
	}
	cert, key, ca := os.Getenv("TEMPORAL_TLS_CERT"), os.Getenv("TEMPORAL_TLS_KEY"), os.Getenv("TEMPORAL_TLS_CA")
	if cert != "" || ca != "" || truthy(os.Getenv("TEMPORAL_TLS")) || os.Getenv("TEMPORAL_API_KEY") != "" {
		tc := &tls.Config{ServerName: os.Getenv("TEMPORAL_TLS_SERVER_NAME"), MinVersion: tls.VersionTLS12}
		if cert != "" || key != "" {
			pair, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				return opts, set, fmt.Errorf("TEMPORAL_TLS_CERT/KEY: %w", err)
			}
			tc.Certificates = []tls.Certificate{pair}
		}
		if ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return opts, set, fmt.Errorf("TEMPORAL_TLS_CA: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return opts, set, fmt.Errorf("TEMPORAL_TLS_CA %s: no certificate found", ca)
			}
			tc.RootCAs = pool
		}
		opts.ConnectionOptions.TLS = tc
	} else if !set {
		if opts.ConnectionOptions.TLS, err = EmbeddedTLS(); err != nil {
			return opts, set, err
		}
	}
	return opts, set, nil
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

func truthy(s string) bool {
	switch strings.ToLower(s) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
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
