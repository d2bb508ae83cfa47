package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/cli/changescmd"
	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/cli/embeddedcmd"
	"github.com/custos-dev/custos/cli/grants"
	"github.com/custos-dev/custos/cli/mcpcmd"
	"github.com/custos-dev/custos/cli/policylab"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// What every command shares lives in cli/cmdline, for cli and for its
// sub-packages alike (they never import cli); these are cli's names for it.

type usageError = cmdline.UsageError

func usagef(format string, args ...any) error { return cmdline.Usagef(format, args...) }

func newFlagSet(name string, out io.Writer) *flag.FlagSet { return cmdline.NewFlagSet(name, out) }

func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	return cmdline.ParseInterleaved(fs, args)
}

func writeJSON(a *App, v any) error { return cmdline.WriteJSON(a.Stdout, v) }

// The commands of cli's sub-packages, with what each needs of the App.

func (a *App) policyLab() *policylab.Env {
	return &policylab.Env{Stdout: a.Stdout, Stderr: a.Stderr, Dial: a.dial, Status: queryStatus}
}

func (a *App) policy(ctx context.Context, args []string) error {
	return a.policyLab().Policy(ctx, args)
}

func (a *App) auditStats(ctx context.Context, args []string) error {
	return a.policyLab().AuditStats(ctx, args)
}

func (a *App) trust(args []string) error { return a.policyLab().Trust(args) }

func warnIgnored(w io.Writer, ws string, ignored []string) { policylab.WarnIgnored(w, ws, ignored) }

func (a *App) mcp(args []string) error {
	return mcpcmd.Env{Stdout: a.Stdout, Stderr: a.Stderr}.MCP(args)
}

func (a *App) temporalProfile(args []string) error {
	return embeddedcmd.Env{Stdout: a.Stdout, Stderr: a.Stderr}.TemporalProfile(args)
}

func (a *App) loginURL(cmd, path string, args []string) error {
	return embeddedcmd.Env{Stdout: a.Stdout, Stderr: a.Stderr}.LoginURL(cmd, path, args)
}

// changesCmd is changes, rewind and fork, given a client on the
// configured server, or the embedded one with a worker here (as run).
func (a *App) changesCmd() *changescmd.Env {
	return &changescmd.Env{Stdout: a.Stdout, Stderr: a.Stderr, Dial: a.dial, Status: queryStatus, Forgotten: forgotten,
		Owner: identities(os.Getenv(EnvIdentity)),
		Connect: func(ctx context.Context) (client.Client, func(), error) {
			s, err := a.connectOrEmbed(ctx, defaultModelOptions())
			if err != nil {
				return nil, nil, err
			}
			return s.client, s.Close, nil
		},
		SendRewind: func(ctx context.Context, c client.Client, id string, r jobapi.Rewind) (jobapi.RewindResult, error) {
			res, err := update[jobapi.RewindResult](ctx, c, id, jobapi.RewindUpdate, r)
			if err != nil && !errors.Is(err, errNotApplied) {
				err = fmt.Errorf("rewind %s: %w", id, err)
			}
			return res, err
		}}
}

func (a *App) changes(ctx context.Context, args []string) error {
	return a.changesCmd().Changes(ctx, args)
}

func (a *App) rewind(ctx context.Context, args []string) error {
	return a.changesCmd().Rewind(ctx, args)
}

func (a *App) fork(ctx context.Context, args []string) error { return a.changesCmd().Fork(ctx, args) }

// grantFlags are approve's flags for a grant (grants.Flags).
type grantFlags struct{ grants.Flags }

func addGrantFlags(fs *flag.FlagSet) grantFlags { return grantFlags{grants.AddFlags(fs)} }

func (g grantFlags) spec(verb string, always bool, now time.Time) (*jobapi.GrantSpec, error) {
	return g.Spec(verb, always, now)
}

func grantText(g jobapi.Grant) string { return grants.Text(g) }

func grantHint(p jobapi.PendingAsk) string { return grants.Hint(p) }

func typedGrant(line string) (string, *jobapi.GrantSpec, string) { return grants.Typed(line) }

// grantCommand runs "grants JOB" or "revoke JOB GRANT".
func (a *App) grantCommand(ctx context.Context, verb string, args []string) error {
	return a.withJob(ctx, args, verb, func(c client.Client, id string, rest []string) error {
		g := grants.Env{Stdout: a.Stdout, Stderr: a.Stderr, EnsureRunning: ensureRunning,
			SendRevoke: func(ctx context.Context, c client.Client, id string, r jobapi.Revoke) (jobapi.Grant, error) {
				g, err := update[jobapi.Grant](ctx, c, id, jobapi.RevokeUpdate, r)
				if err != nil && !errors.Is(err, errNotApplied) {
					err = fmt.Errorf("revoke %s in %s: %w", r.GrantID, id, err)
				}
				return g, err
			}}
		if verb == "revoke" {
			return g.Revoke(ctx, c, id, rest)
		}
		return g.List(ctx, c, id)
	})
}
