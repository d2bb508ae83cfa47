// Command worker serves custos' task queues, on the Temporal server the
// Temporal CLI's settings name (TEMPORAL_* variables, TEMPORAL_PROFILE; see
// temporalclient.Load). With no address configured it starts an embedded
// Temporal server (SQLite, loopback) and its Web UI.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/temporalclient"
)

func main() {
	sandbox.MaybeRunHelper()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "custos worker:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		baseURL = flag.String("base-url", os.Getenv("OPENAI_BASE_URL"), "OpenAI-compatible endpoint (OPENAI_BASE_URL)")
		model   = flag.String("model", cmp.Or(os.Getenv("OPENAI_MODEL"), app.DefaultModel), "model name (OPENAI_MODEL)")
		dbFile  = flag.String("db", "", "SQLite file of the embedded server (default: user state dir)")
		port    = flag.Int("port", devserver.DefaultPort, "frontend port of the embedded server (0: any free port)")
		uiPort  = flag.Int("ui-port", devserver.DefaultUIPort, "Web UI port of the embedded server (0: any free port, -1: no UI)")
		host    = flag.String("host", app.HostName(), "this host's name, for routing jobs to the workspaces it holds (CUSTOS_HOST; default the machine's name)")
		roots   = flag.String("workspaces", cmp.Or(os.Getenv("CUSTOS_WORKSPACES"), "/"), "comma-separated workspace roots this host holds (CUSTOS_WORKSPACES)")
		lanes   = flag.Int("bash-lanes", 0, "single-concurrency Bash lanes (default: CUSTOS_BASH_LANES, else one per CPU)")
		window  = flag.Int("context-window", 0, "the model's context window in tokens (default: CUSTOS_CONTEXT_WINDOW, else known for the model, else 128000)")
		strict  = flag.Bool("require-sandbox", false, "refuse to start when no OS sandbox is available (without it the worker starts and Bash is refused, or asked for each command with allowUnsandboxed)")
	)
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("host", *host)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	channels, err := app.ChannelsFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	opts, set, err := temporalclient.Load(logger)
	if err != nil {
		return err
	}
	c := client.Client(nil)
	if set {
		if c, err = temporalclient.Dial(ctx, opts, 30*time.Second); err != nil {
			return err
		}
		defer c.Close()
		logger.Info("connected to Temporal", "address", opts.HostPort, "namespace", opts.Namespace)
	} else {
		emb, err := temporalclient.StartEmbedded(ctx, devserver.Options{DBFile: *dbFile, Port: *port, UIPort: *uiPort}, logger)
		if err != nil {
			return err
		}
		defer emb.Close()
		c = emb.Client
		fmt.Fprint(os.Stderr, emb.Banner())
	}
	tel, err := app.StartTelemetry(ctx, app.TelemetryFromEnv(*host, logger))
	if err != nil {
		return err
	}
	defer func() {
		// Flush the last spans, but do not hang on an unreachable collector.
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tel.Close(cctx); err != nil {
			logger.Warn("telemetry shutdown", "error", err)
		}
	}()
	tc, err := tel.Client(c, cmp.Or(opts.Namespace, "default"), logger)
	if err != nil {
		return err
	}
	if tc != c {
		defer tc.Close()
		c = tc
	}
	wo := app.Options{
		BaseURL: *baseURL, APIKey: os.Getenv("OPENAI_API_KEY"), Model: *model,
		BashLanes: *lanes, ContextWindow: *window,
		Host: *host, Workspaces: strings.Split(*roots, ","),
		Sandbox: sandbox.Config{FailIfUnavailable: *strict, Logger: logger},
		Logger:  logger, Versioning: app.VersioningFromEnv(),
	}
	ch, err := app.StartChannels(ctx, c, channels, logger)
	if err != nil {
		return err
	}
	defer ch.Close()
	wo.Notifiers = ch.Notifiers
	stopDemo, demo, err := app.UseDemoModel(&wo)
	if err != nil {
		return err
	}
	defer stopDemo()
	if demo {
		fmt.Fprintln(os.Stderr, "custos: no OPENAI_API_KEY or OPENAI_BASE_URL: using the offline demo model")
	}
	w, err := app.Start(c, wo)
	if err != nil {
		return err
	}
	defer w.Stop()
	logger.Info("custos worker ready", "queues", "custos, custos-bash")
	<-ctx.Done()
	return nil
}
