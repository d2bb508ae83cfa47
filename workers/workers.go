// Package workers builds and runs custos' two Temporal workers: the main
// queue (workflow, model, file tools, hooks, settings, sessions) and the Bash
// queue, served one command at a time.
package workers

import (
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/workflows"
)

// Options configure a custos worker process.
type Options struct {
	// Model endpoint; BaseURL "" means OpenAI's.
	BaseURL, APIKey, Model string
	Sandbox                sandbox.Config
	// UserConfigDir overrides where user settings are read from.
	UserConfigDir string
	// Hooks are the system hooks; nil means DefaultHooks().
	Hooks  *hooks.Registry
	Logger *slog.Logger
}

// Workers are the running workers of one process.
type Workers struct {
	main, bash worker.Worker
	Sandbox    sandbox.Sandbox
}

// Start builds both workers on c and starts them.
func Start(c client.Client, o Options) (*Workers, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Sandbox.Logger == nil {
		o.Sandbox.Logger = o.Logger
	}
	sb, err := sandbox.New(o.Sandbox)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	name, why := sb.Backend()
	o.Logger.Info("sandbox ready", "backend", name, "why", why)
	reg := o.Hooks
	if reg == nil {
		if reg, err = DefaultHooks(); err != nil {
			return nil, err
		}
	}
	set := activities.Set{
		Model:    activities.NewModel(o.BaseURL, o.APIKey, o.Model, nil),
		Tools:    &activities.Tools{Sandbox: sb, Logger: o.Logger},
		Settings: &activities.Settings{UserConfigDir: o.UserConfigDir, Sandbox: sb},
		Hooks:    &activities.Hooks{},
	}
	w := &Workers{Sandbox: sb}
	w.main = worker.New(c, activities.TaskQueue, worker.Options{})
	agent := &workflows.Agent{Hooks: reg}
	w.main.RegisterWorkflowWithOptions(agent.Run, workflow.RegisterOptions{Name: workflows.WorkflowName})
	set.Register(w.main)

	// One command at a time per worker process: Bash calls of a job are
	// already serial, and this keeps parallel jobs from piling up processes.
	w.bash = worker.New(c, activities.BashTaskQueue, worker.Options{MaxConcurrentActivityExecutionSize: 1})
	set.RegisterBash(w.bash)

	if err := w.main.Start(); err != nil {
		return nil, fmt.Errorf("start worker on %s: %w", activities.TaskQueue, err)
	}
	if err := w.bash.Start(); err != nil {
		w.main.Stop()
		return nil, fmt.Errorf("start worker on %s: %w", activities.BashTaskQueue, err)
	}
	return w, nil
}

// Stop stops both workers, waiting for running activities to end.
func (w *Workers) Stop() {
	w.bash.Stop()
	w.main.Stop()
}
