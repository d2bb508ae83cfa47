package devserver

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

const pollInterval = 50 * time.Millisecond

// waitFrontend returns once the frontend answers DescribeNamespace for ns.
// temporal.Server.Start returns when the services are started, but the
// frontend may still be loading its namespace cache; a client connecting in
// that window gets "namespace not found".
func waitFrontend(ctx context.Context, addr, ns string) error {
	ctx, cancel := withDefaultTimeout(ctx, readyTimeout)
	defer cancel()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
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

// startUI runs the ui-server in the background and waits until it accepts
// connections.
func (s *Server) startUI(ctx context.Context, o Options, port int) (err error) {
	addr := net.JoinHostPort(o.IP, strconv.Itoa(port))
	// ui-server's Start calls its logger's Fatal (os.Exit) when it cannot
	// bind, which would take the whole custos worker down. allocatePorts
	// checked the port moments ago; check again right before handing it
	// over to narrow the window to almost nothing.
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("devserver: UI port %d is not available: %w", port, err)
	}
	_ = l.Close()

	// NewServer panics on bad configuration or missing embedded assets;
	// report that as an error instead.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("devserver: creating UI server: %v", r)
		}
	}()
	ui := uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                o.IP,
		Port:                port,
		TemporalGRPCAddress: s.frontendAddr,
		EnableUI:            true,
		DefaultNamespace:    o.Namespace,
		// Plain HTTP on loopback: a Secure cookie would never be sent back.
		CORS:     uiconfig.CORS{CookieInsecure: true},
		HideLogs: true,
		// Loopback only and possibly offline: don't call out for news.
		DisableNewsFetch: true,
	}))
	s.ui, s.uiDone = ui, make(chan struct{})
	go func() {
		defer close(s.uiDone)
		if err := ui.Start(); err != nil {
			o.Logger.Error("devserver: UI server stopped", "error", err)
		}
	}()

	ctx, cancel := withDefaultTimeout(ctx, readyTimeout)
	defer cancel()
	var d net.Dialer
	for {
		c, derr := d.DialContext(ctx, "tcp", addr)
		if derr == nil {
			_ = c.Close()
			s.uiAddr = "http://" + addr
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devserver: UI on %s not listening: %w", addr, ctx.Err())
		case <-s.uiDone:
			return fmt.Errorf("devserver: UI server on %s exited during startup", addr)
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
