package devserver

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/types/known/durationpb"
)

const pollInterval = 50 * time.Millisecond

// waitFrontend returns once the frontend answers DescribeNamespace for ns.
// temporal.Server.Start returns when the services are started, but the
// frontend may still be loading its namespace cache; a client connecting in
// that window gets "namespace not found".
func waitFrontend(ctx context.Context, addr, ns string, clientTLS *tls.Config) error {
	ctx, cancel := withDefaultTimeout(ctx, readyTimeout)
	defer cancel()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(clientTLS.Clone())))
	if err != nil {
		return fmt.Errorf("devserver: dialing frontend %s: %w", addr, err)
	}
	defer func() { _ = conn.Close() }()
	client := workflowservice.NewWorkflowServiceClient(conn)
	for {
		_, err := client.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devserver: frontend %s not serving namespace %q: %w (last error: %v)", addr, ns, ctx.Err(), err)
		case <-time.After(pollInterval):
		}
	}
}

// DefaultRetention is how long the embedded server keeps ended jobs'
// histories unless told otherwise: a week, as long as a conversation waits
// for its next message by default.
const DefaultRetention = 7 * 24 * time.Hour

// minRetention is the least the server accepts.
const minRetention = 24 * time.Hour

// EnvRetention sets the embedded server's retention (a duration, "720h").
const EnvRetention = "CUSTOS_RETENTION"

// RetentionFromEnv reads CUSTOS_RETENTION through getenv: 0 when unset.
func RetentionFromEnv(getenv func(string) string) (time.Duration, error) {
	v := getenv(EnvRetention)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", EnvRetention, v, err)
	}
	if d < minRetention {
		return 0, fmt.Errorf("%s=%q: the server keeps ended jobs at least 24h", EnvRetention, v)
	}
	return d, nil
}

// setRetention sets the namespace's retention of ended workflows when it
// differs from what it has.
func setRetention(ctx context.Context, addr, ns string, d time.Duration, clientTLS *tls.Config) error {
	if d == 0 {
		d = DefaultRetention
	}
	d = max(d, minRetention)
	ctx, cancel := withDefaultTimeout(ctx, readyTimeout)
	defer cancel()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(clientTLS.Clone())))
	if err != nil {
		return fmt.Errorf("devserver: dialing frontend %s: %w", addr, err)
	}
	defer func() { _ = conn.Close() }()
	client := workflowservice.NewWorkflowServiceClient(conn)
	desc, err := client.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	if err != nil {
		return fmt.Errorf("devserver: describing namespace %q: %w", ns, err)
	}
	if desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() == d {
		return nil
	}
	_, err = client.UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{Namespace: ns,
		Config: &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(d)}})
	if err != nil {
		return fmt.Errorf("devserver: setting the retention of namespace %q to %s: %w", ns, d, err)
	}
	return nil
}

// startUI runs the ui-server on its private port (mutual TLS, like the
// frontend) and the gate (uigate.go) on the public one, and waits until both
// accept connections.
func (s *Server) startUI(ctx context.Context, o Options, ports portSet) (err error) {
	addr := net.JoinHostPort(o.IP, strconv.Itoa(ports.ui))
	backend := net.JoinHostPort(o.IP, strconv.Itoa(ports.uiBackend))
	// The gate binds its port now, so a busy port is an error here.
	public, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("devserver: UI port %d is not available: %w", ports.ui, err)
	}
	defer func() {
		if err != nil {
			_ = public.Close()
		}
	}()
	// ui-server's Start calls its logger's Fatal (os.Exit) when it cannot
	// bind, which would take the whole custos worker down. allocatePorts
	// checked the port moments ago; check again right before handing it
	// over to narrow the window to almost nothing.
	l, err := net.Listen("tcp", backend)
	if err != nil {
		return fmt.Errorf("devserver: UI backend port %d is not available: %w", ports.uiBackend, err)
	}
	_ = l.Close()

	// NewServer panics on bad configuration or missing embedded assets;
	// report that as an error instead.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("devserver: creating UI server: %v", r)
		}
	}()
	clientData, err := readBase64(s.certs.CA, s.certs.ClientCert, s.certs.ClientKey)
	if err != nil {
		return err
	}
	ui := uiserver.NewServer(uiserveroptions.WithConfigProvider(s.uiConfig(o, ports, clientData)))
	s.ui, s.uiDone = ui, make(chan struct{})
	go func() {
		defer close(s.uiDone)
		if err := ui.Start(); err != nil {
			o.Logger.Error("devserver: UI server stopped", "error", err)
		}
	}()

	if err := s.waitUI(ctx, backend); err != nil {
		return err
	}
	s.uiGate = newUIGate(backend, s.ClientTLS(), ports.ui, s.certs.Dir, o.Logger)
	s.uiHTTP = &http.Server{Handler: s.uiGate, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.uiHTTP.Serve(public); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Logger.Error("devserver: Web UI gate stopped", "error", err)
		}
	}()
	s.uiAddr = "http://" + addr
	if s.uiLogin, err = s.NewUILoginURL(); err != nil {
		return err
	}
	// For `starter ui-url` (MintUILoginURL).
	if err := writePrivate(filepath.Join(s.certs.Dir, uiAddressFile), []byte(s.uiAddr+"\n")); err != nil {
		return err
	}
	return nil
}

// uiConfig is the ui-server's configuration: a client of the frontend like
// any other, serving only the gate (mutual TLS). Its client certificates go
// in as data (CA, cert, key): from files it would log a line on every
// handshake.
func (s *Server) uiConfig(o Options, ports portSet, clientData []string) *uiconfig.Config {
	c := s.certs
	return &uiconfig.Config{
		Host:                o.IP,
		Port:                ports.uiBackend,
		TemporalGRPCAddress: s.frontendAddr,
		TLS: uiconfig.TLS{
			CaData: clientData[0], CertData: clientData[1], KeyData: clientData[2],
			ServerName: ServerName, EnableHostVerification: true,
		},
		// Only the gate, holding the owner's client certificate, gets in.
		UIServerTLS: uiconfig.UIServerTLS{
			CertFile: c.ServerCert, KeyFile: c.ServerKey,
			MTLS: &uiconfig.UIServerMTLS{CaFile: c.CA},
		},
		EnableUI:         true,
		DefaultNamespace: o.Namespace,
		// The browser talks plain HTTP to the gate on loopback: a Secure
		// cookie would never be sent back.
		CORS:     uiconfig.CORS{CookieInsecure: true},
		HideLogs: true,
		// Loopback only and possibly offline: don't call out for news.
		DisableNewsFetch: true,
	}
}

// waitUI waits until the ui-server on backend completes a TLS handshake.
func (s *Server) waitUI(ctx context.Context, backend string) error {
	ctx, cancel := withDefaultTimeout(ctx, readyTimeout)
	defer cancel()
	// A full handshake, not a bare TCP connect: the ui-server logs every
	// aborted handshake as an error.
	d := tls.Dialer{Config: s.ClientTLS()}
	for {
		c, derr := d.DialContext(ctx, "tcp", backend)
		if derr == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devserver: UI on %s not listening: %w", backend, ctx.Err())
		case <-s.uiDone:
			return fmt.Errorf("devserver: UI server on %s exited during startup", backend)
		case <-time.After(pollInterval):
		}
	}
}

// withDefaultTimeout bounds ctx by d unless it already has a deadline.
func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// readBase64 returns the files' contents, base64-encoded.
func readBase64(names ...string) ([]string, error) {
	out := make([]string, len(names))
	for i, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("devserver: reading %s: %w", name, err)
		}
		out[i] = base64.StdEncoding.EncodeToString(b)
	}
	return out, nil
}
