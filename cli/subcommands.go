package cli

import (
	"context"
	"flag"
	"io"

	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/cli/embeddedcmd"
	"github.com/custos-dev/custos/cli/mcpcmd"
	"github.com/custos-dev/custos/cli/policylab"
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
