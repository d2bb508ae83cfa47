package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/custos-dev/custos/stream"
)

// EnvStreamAddr is where a worker serves its model calls' text to
// followers on other hosts (host:port; default 127.0.0.1:0, a free
// loopback port; "off": not served, followers elsewhere see each answer
// when its turn ends). EnvStreamURL is the URL followers are told to use
// (default http://ADDR/stream with the listener's address, the machine's
// host name for an unspecified IP): set it when followers reach the
// worker through another name, a proxy or TLS.
const (
	EnvStreamAddr = "CUSTOS_STREAM_ADDR"
	EnvStreamURL  = "CUSTOS_STREAM_URL"
)

// StartStreamServer serves hub's text until ctx ends; nil when hub is nil
// or the address is "off".
func StartStreamServer(ctx context.Context, hub *stream.Hub, getenv func(string) string, logger *slog.Logger) (*stream.Server, error) {
	addr := getenv(EnvStreamAddr)
	if hub == nil || addr == "off" {
		return nil, nil
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", EnvStreamAddr, addr, err)
	}
	url := getenv(EnvStreamURL)
	if url == "" {
		url = "http://" + advertised(ln.Addr().(*net.TCPAddr)) + "/stream"
	}
	srv := &stream.Server{Hub: hub, URL: url}
	mux := http.NewServeMux()
	mux.Handle("/stream", srv)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("stream listener stopped", "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	logger.Info("model text served to followers", "listen", ln.Addr().String(), "url", url)
	return srv, nil
}

// advertised is a listener's address as another host names it.
func advertised(a *net.TCPAddr) string {
	if a.IP.IsUnspecified() {
		if h, err := os.Hostname(); err == nil && h != "" {
			return net.JoinHostPort(h, fmt.Sprint(a.Port))
		}
	}
	return a.String()
}
