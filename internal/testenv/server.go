package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/devserver"
)

// Server is what a test needs of a Temporal server, embedded or not: where
// it is and how its owner connects.
type Server interface {
	FrontendAddr() string
	ClientTLS() *tls.Config
	TLSFiles() devserver.TLSFiles
}

// startTimeout bounds a server's start: seconds on an idle machine, more on
// a busy one.
const startTimeout = 2 * time.Minute

// startServer starts the embedded server with o, logging through Logger
// unless o says otherwise.
func startServer(o devserver.Options) (*devserver.Server, error) {
	if o.Logger == nil {
		o.Logger = Logger()
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	srv, err := devserver.Start(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("start the embedded Temporal server: %w", err)
	}
	return srv, nil
}

// StartServer starts the embedded server with o (Port 0: a free loopback
// port; UIPort -1: no Web UI; DBFile "": in memory) and stops it when the
// test ends.
func StartServer(t testing.TB, o devserver.Options) *devserver.Server {
	t.Helper()
	srv, err := startServer(o)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })
	return srv
}

// ClientOptions connect to addr as the server's owner (with its client
// certificate), logging through Logger.
func ClientOptions(addr string, tc *tls.Config) client.Options {
	return client.Options{HostPort: addr, Logger: TemporalLogger(),
		ConnectionOptions: client.ConnectionOptions{TLS: tc}}
}

// Dial connects to srv as its owner and closes the client when the test ends.
func Dial(t testing.TB, srv Server) client.Client {
	t.Helper()
	c, err := client.Dial(ClientOptions(srv.FrontendAddr(), srv.ClientTLS()))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}
