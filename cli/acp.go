package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/custos-dev/custos/acpagent"
	"github.com/custos-dev/custos/app"
)

// acp is `starter acp`: custos as an Agent Client Protocol agent on stdin
// and stdout (docs/editors.md). stdout carries protocol messages only:
// anything else this process would print goes to stderr. With no server
// reachable it starts the embedded one and a worker, as run does; the
// jobs then go on only while this process (or another starter, or a
// worker) runs.
func (a *App) acp(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return usagef("acp: no arguments (an editor starts it: docs/editors.md)")
	}
	out := a.Stdout
	os.Stdout = os.Stderr // a stray print must not break the protocol
	a.Stdout = a.Stderr
	s, err := a.connectOrEmbed(ctx, defaultModelOptions())
	if err != nil {
		return err
	}
	defer s.Close()
	o := acpagent.Options{Client: s.client, Hub: a.hub, By: app.OSUser(), Owner: identities(os.Getenv(EnvIdentity)),
		InProcess: s.workers != nil, Logger: a.quietLogger()}
	if s.workers == nil {
		o.Route = func(ctx context.Context, ws string) (string, error) { return app.RouteJob(ctx, s.client, ws) }
	}
	o.List = func(ctx context.Context) ([]acpagent.SessionRow, error) {
		rows, err := ListJobs(ctx, s.client, "")
		if err != nil {
			return nil, err
		}
		out := make([]acpagent.SessionRow, 0, len(rows))
		for _, r := range rows {
			out = append(out, acpagent.SessionRow{Job: r.Job, Workspace: r.Workspace, Task: r.Task, Updated: r.LastActivity})
		}
		return out, nil
	}
	if o.InProcess {
		a.quietLogger().Log(ctx, slog.LevelWarn, "custos acp: the server and worker run in this process; closing the editor pauses its jobs until a starter or worker runs again")
	}
	if err := acpagent.Serve(ctx, a.Stdin, out, o); err != nil {
		return fmt.Errorf("acp: %w", err)
	}
	return nil
}
