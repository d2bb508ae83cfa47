package app

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/stream"
)

// The stream listener: loopback on a free port by default, the URL it
// advertises overridable, off when asked, a bad address refused by name.
func TestStartStreamServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hub := stream.NewHub(stream.Limits{})
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

	srv, err := StartStreamServer(ctx, hub, env(nil), slog.Default())
	require.NoError(t, err)
	require.NotNil(t, srv)
	assert.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:") && strings.HasSuffix(srv.URL, "/stream"), srv.URL)
	resp, err := http.Get(srv.URL + "?job=j")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no token, no text")

	srv, err = StartStreamServer(ctx, hub, env(map[string]string{EnvStreamURL: "https://w1.example:7443/stream"}), slog.Default())
	require.NoError(t, err)
	assert.Equal(t, "https://w1.example:7443/stream", srv.URL)

	srv, err = StartStreamServer(ctx, hub, env(map[string]string{EnvStreamAddr: "off"}), slog.Default())
	require.NoError(t, err)
	assert.Nil(t, srv)
	srv, err = StartStreamServer(ctx, nil, env(nil), slog.Default())
	require.NoError(t, err)
	assert.Nil(t, srv, "no hub (CUSTOS_STREAM=0): nothing to serve")

	_, err = StartStreamServer(ctx, hub, env(map[string]string{EnvStreamAddr: "nowhere:99999"}), slog.Default())
	assert.ErrorContains(t, err, EnvStreamAddr)
}
