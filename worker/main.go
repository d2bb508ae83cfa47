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

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/sandbox"
)

func main() {
	sandbox.MaybeRunHelper()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "custos worker:", err)
		os.Exit(1)
	}
}

func run() error {
	envRetention, err := devserver.RetentionFromEnv(os.Getenv)
	if err != nil {
		return err
	}
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
	retention := flag.Duration("retention", envRetention, "how long the embedded server keeps ended jobs' histories (CUSTOS_RETENTION; default a week, at least 24h)")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("host", *host)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return app.Serve(ctx, app.Options{
		BaseURL: *baseURL, APIKey: os.Getenv("OPENAI_API_KEY"), Model: *model,
		BashLanes: *lanes, ContextWindow: *window,
		Host: *host, Workspaces: strings.Split(*roots, ","),
		Sandbox: sandbox.Config{FailIfUnavailable: *strict, Logger: logger},
		Logger:  logger, Versioning: app.VersioningFromEnv(),
	}, devserver.Options{DBFile: *dbFile, Port: *port, UIPort: *uiPort, Retention: *retention}, os.Stderr)
}
