// Package app is what the worker binary wires: custos' Temporal workers (the
// main queue with the workflow, model, file tools, hooks, settings and
// sessions; the host queue; the single-concurrency Bash lanes), the approval
// channels, the system hooks, telemetry and host routing.
package app

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/worktree"
	"github.com/custos-dev/custos/checkpoint"
	"github.com/custos-dev/custos/lsp"
	"github.com/custos-dev/custos/mcpservers"
	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/stream"
	"github.com/custos-dev/custos/workflows"
)

// Options configure a custos worker process.
type Options struct {
	// Model endpoint; BaseURL "" means OpenAI's.
	BaseURL, APIKey, Model string
	Sandbox                sandbox.Config
	// UserConfigDir overrides where user settings are read from.
	UserConfigDir string
	// StateDir overrides custos' state directory for the jobs' transcripts
	// and audits and, unless Sandbox.CacheDir names another, the sandbox's
	// workspace caches (default: statedir.Dir).
	StateDir string
	// ContextWindow is the model's context window in tokens (0:
	// CUSTOS_CONTEXT_WINDOW, else the table of well-known models).
	ContextWindow int
	// Host names the machine's workspaces for routing ("" : none, the
	// worker serves every job's workspace activities on the shared queue);
	// Workspaces are the roots it holds (default "/").
	Host       string
	Workspaces []string
	// BashLanes is how many single-concurrency Bash lanes this worker
	// serves (0: CUSTOS_BASH_LANES, else one per CPU).
	BashLanes int
	// Notifiers are the channels pending calls are announced on (Slack,
	// webhooks); none means jobs run no notification activities.
	Notifiers []notify.Notifier
	Logger    *slog.Logger
	// Interceptors are added to every worker.
	Interceptors []interceptor.WorkerInterceptor
	// Versioning: the Worker Deployment Version of this process.
	Versioning Versioning
	// Stream is where the model activity publishes answers as they are
	// written (nil: Start makes one, unless CUSTOS_STREAM=0).
	Stream *stream.Hub
	// StreamServer, when set, serves Stream's text to followers on other
	// hosts (StartStreamServer); the model activity says where.
	StreamServer *stream.Server
}

// Workers are the running workers of one process.
type Workers struct {
	main   worker.Worker
	host   []worker.Worker // the host's workspace queue and its discovery poller
	lanes  []worker.Worker
	stopGC func()
	// lsp are the LSP tool's language servers, shut down with the workers.
	lsp     *lsp.Pool
	Sandbox sandbox.Sandbox
	// Stream carries this process's model answers as they are written
	// (nil when streaming is off): `starter run` prints them from here.
	Stream *stream.Hub
	// mcp holds the MCP servers this process started, stopped with it.
	mcp *mcpservers.Pool
}

// sandboxConfig is o's sandbox configuration with the defaults o implies.
func sandboxConfig(o Options) sandbox.Config {
	cfg := o.Sandbox
	if cfg.Logger == nil {
		cfg.Logger = o.Logger
	}
	if cfg.CacheDir == "" && o.StateDir != "" {
		// All of custos' state in the one directory asked for: workers
		// given their own (tests, a second instance) must not fill the
		// user's sandbox-cache, nor evict from it.
		cfg.CacheDir = filepath.Join(o.StateDir, "sandbox-cache")
	}
	return cfg
}

// activitySet is the activities a worker of o serves, over its sandbox.
func activitySet(o Options, sb sandbox.Sandbox) activities.Set {
	model := activities.NewModel(o.BaseURL, o.APIKey, o.Model, nil)
	model.Stream = o.Stream
	model.Serve = o.StreamServer
	return activities.Set{
		Model:    model,
		Tools:    &activities.Tools{Sandbox: sb, Logger: o.Logger, LSPServers: lspServers(sb)},
		Settings: &activities.Settings{UserConfigDir: o.UserConfigDir, StateDir: o.StateDir, Sandbox: sb},
		Hooks:    &activities.Hooks{},
		MCP: &activities.MCP{Pool: &mcpservers.Pool{Sandbox: sb, UserConfigDir: o.UserConfigDir,
			StateDir: o.StateDir, Logger: o.Logger}},
	}
}

// lspServers is the LSP tool's pool: its language servers run in the
// sandbox (read-only workspace, masks, no network); their answers also
// pass the path guard and the Read deny rules in the activity.
func lspServers(sb sandbox.Sandbox) *lsp.Pool { return lsp.NewPool(activities.SandboxStarter(sb)) }

// Start builds both workers on c and starts them.
func Start(c client.Client, o Options) (*Workers, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	sb, err := sandbox.New(sandboxConfig(o))
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	name, why := sb.Backend()
	o.Logger.Info("sandbox ready", "backend", name, "why", why)
	if o.Stream == nil {
		o.Stream = NewStreamHub(os.Getenv)
	}
	set := activitySet(o, sb)
	lanes, err := bashLanes(o.BashLanes)
	if err != nil {
		return nil, err
	}
	set.Settings.BashLanes = lanes
	set.Settings.Host = o.Host
	if set.Settings.ContextWindow, err = contextWindow(o.ContextWindow, o.Model); err != nil {
		return nil, err
	}
	notifiers := &notify.Activities{Notifiers: o.Notifiers}
	set.Settings.Notifiers = notifiers.Names()
	w := &Workers{Sandbox: sb, Stream: o.Stream, mcp: set.MCP.Pool, lsp: set.Tools.LSPServers}
	wopts := workerOptions(o)
	w.main = worker.New(c, api.TaskQueue, wopts)
	(&workflows.Agent{}).Register(w.main)
	set.Register(w.main)
	worktree.Register(w.main, set.Settings)
	notifiers.Register(w.main)

	// Each lane runs one command at a time: a workspace's commands always
	// go to the same lane, so they never overlap, while other workspaces'
	// commands run on the other lanes.
	var identity string
	if o.Host != "" {
		if identity, err = hostIdentity(o); err != nil {
			return nil, err
		}
	}
	for i := 0; i < lanes; i++ {
		lo := wopts
		lo.MaxConcurrentActivityExecutionSize = 1
		lo.MaxConcurrentActivityTaskPollers = 1 // one slot: one poll at a time
		lo.Identity = identity
		lw := worker.New(c, api.LaneQueue(o.Host, i), lo)
		set.RegisterBash(lw)
		w.lanes = append(w.lanes, lw)
	}
	if o.Host != "" {
		w.host = hostWorkers(c, wopts, identity, o.Host, set)
	}
	if err := w.main.Start(); err != nil {
		return nil, fmt.Errorf("start worker on %s: %w", api.TaskQueue, err)
	}
	for _, hw := range w.host {
		if err := hw.Start(); err != nil {
			w.Stop()
			return nil, fmt.Errorf("start host worker: %w", err)
		}
	}
	for i, lw := range w.lanes {
		if err := lw.Start(); err != nil {
			w.Stop()
			return nil, fmt.Errorf("start Bash lane %d: %w", i, err)
		}
	}
	o.Logger.Info("Bash lanes", "lanes", lanes)
	w.stopGC = startGC(c, o)
	return w, nil
}

// Stop stops the workers, waiting for running activities to end.
func (w *Workers) Stop() {
	if w.stopGC != nil {
		w.stopGC()
	}
	for _, lw := range w.lanes {
		lw.Stop()
	}
	for _, hw := range w.host {
		hw.Stop()
	}
	w.main.Stop()
	if w.mcp != nil {
		w.mcp.Close()
	}
	// After the workers: no LSP activity runs any more.
	if w.lsp != nil {
		w.lsp.Close()
	}
	// A Bash call's checkpoint finishes in the background; one cut off
	// here would be finished by its first reader, but need not be.
	checkpoint.Wait()
}

// EnvStream set to 0 turns streaming off: the model is asked for whole
// answers (stream: false), as before; watchers see each turn when it ends.
const EnvStream = "CUSTOS_STREAM"

// NewStreamHub is the hub a worker process's model activity publishes to,
// nil when EnvStream is 0.
func NewStreamHub(getenv func(string) string) *stream.Hub {
	if getenv(EnvStream) == "0" {
		return nil
	}
	return stream.NewHub(stream.Limits{})
}

// bashLanes is the configured lane count: n, else CUSTOS_BASH_LANES, else
// one per CPU.
func bashLanes(n int) (int, error) {
	if n > 0 {
		return n, nil
	}
	if v := os.Getenv("CUSTOS_BASH_LANES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 256 {
			return 0, fmt.Errorf("CUSTOS_BASH_LANES=%q: want a whole number from 1 to 256", v)
		}
		return n, nil
	}
	return activities.DefaultBashLanes(), nil
}

// contextWindow is the configured window: n, else CUSTOS_CONTEXT_WINDOW,
// else the model's from the table.
func contextWindow(n int, model string) (int, error) {
	if n > 0 {
		return n, nil
	}
	if v := os.Getenv("CUSTOS_CONTEXT_WINDOW"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			return 0, fmt.Errorf("CUSTOS_CONTEXT_WINDOW=%q: want a number of tokens, at least 1000", v)
		}
		return n, nil
	}
	return api.ContextWindowFor(model), nil
}
