package app

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/temporalclient"
)

// Serve runs a worker process until ctx ends: it connects to the Temporal
// server the Temporal CLI's settings name (or starts the embedded one,
// described by embedded, when none is named), wraps the client in telemetry,
// starts the approval channels and, without a model key, the offline demo
// model, then serves o's queues. What it says to a person goes to banner.
func Serve(ctx context.Context, o Options, embedded devserver.Options, banner io.Writer) error {
	logger := o.Logger
	channels, err := ChannelsFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	c, emb, namespace, closeClient, err := connect(ctx, embedded, logger)
	if err != nil {
		return err
	}
	defer closeClient()
	c, closeTelemetry, err := withTelemetry(ctx, c, namespace, o.Host, logger)
	if err != nil {
		return err
	}
	defer closeTelemetry()
	channels.StateDir = o.StateDir
	// One hub for the model activity and the inbox's job pages.
	o.Stream = NewStreamHub(os.Getenv)
	if o.StreamServer, err = StartStreamServer(ctx, o.Stream, os.Getenv, logger); err != nil {
		return err
	}
	if err := StartInbox(ctx, c, emb, os.Getenv, o.StateDir, o.Stream, banner, logger); err != nil {
		return err
	}
	if emb != nil {
		// After the inbox is mounted: the banner carries its link.
		fmt.Fprint(banner, emb.Banner())
	}
	ch, err := StartChannels(ctx, c, channels, logger)
	if err != nil {
		return err
	}
	defer ch.Close()
	gh, err := StartGitHubHooks(c, os.Getenv(EnvHooksAddr), o.UserConfigDir, logger)
	if err != nil {
		return err
	}
	defer gh.Close()
	o.Notifiers = append(ch.Notifiers, gh.Notifiers...)
	stopDemo, demo, err := UseDemoModel(&o)
	if err != nil {
		return err
	}
	defer stopDemo()
	if demo {
		fmt.Fprintln(banner, "custos: no OPENAI_API_KEY or OPENAI_BASE_URL: using the offline demo model")
	}
	w, err := Start(c, o)
	if err != nil {
		return err
	}
	defer w.Stop()
	logger.Info("custos worker ready", "queues", "custos, custos-bash")
	<-ctx.Done()
	return nil
}

// connect dials the configured Temporal server, or starts the embedded one
// (emb) when no address is configured. close releases whichever it was.
func connect(ctx context.Context, embedded devserver.Options, logger *slog.Logger) (c client.Client, emb *temporalclient.Embedded, namespace string, close func(), err error) {
	opts, set, err := temporalclient.Load(logger)
	if err != nil {
		return nil, nil, "", nil, err
	}
	if set {
		if c, err = temporalclient.Dial(ctx, opts, 30*time.Second); err != nil {
			return nil, nil, "", nil, err
		}
		logger.Info("connected to Temporal", "address", opts.HostPort, "namespace", opts.Namespace)
		return c, nil, cmp.Or(opts.Namespace, "default"), c.Close, nil
	}
	if emb, err = temporalclient.StartEmbedded(ctx, embedded, logger); err != nil {
		return nil, nil, "", nil, err
	}
	return emb.Client, emb, cmp.Or(opts.Namespace, "default"), emb.Close, nil
}

// withTelemetry starts the exporters TelemetryFromEnv configures and returns
// c wrapped to trace and measure through them; close flushes the last spans
// without hanging on an unreachable collector.
func withTelemetry(ctx context.Context, c client.Client, namespace, host string, logger *slog.Logger) (client.Client, func(), error) {
	tel, err := StartTelemetry(ctx, TelemetryFromEnv(host, logger))
	if err != nil {
		return nil, nil, err
	}
	flush := func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tel.Close(cctx); err != nil {
			logger.Warn("telemetry shutdown", "error", err)
		}
	}
	tc, err := tel.Client(c, namespace, logger)
	if err != nil {
		flush()
		return nil, nil, err
	}
	if tc == c {
		return c, flush, nil
	}
	return tc, func() { tc.Close(); flush() }, nil
}
