// Package sandboxcmd is `starter sandbox check|cache|exec`: the sandbox a
// job's commands get, shown and tried by a person, with a workspace's
// settings applied as a job applies them.
package sandboxcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/netpolicy"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/sandbox/masks"
	"github.com/custos-dev/custos/sandbox/pathguard"
	"github.com/custos-dev/custos/sandbox/probecache"
	"github.com/custos-dev/custos/sandbox/provision"
	"github.com/custos-dev/custos/settingsfile"
)

// Main implements `starter sandbox exec|check` and returns the exit
// code (exec: the command's). main() must have called sandbox.MaybeRunHelper()
// first: the allowlist bridge re-executes this binary.
func Main(args []string, stdout, stderr io.Writer) int {
	usage := func() int {
		fmt.Fprintln(stderr, "usage: starter sandbox check [--workspace DIR]\n       starter sandbox cache [--workspace DIR] [--clear]\n       starter sandbox exec [--workspace DIR] [--allow-domain D ...] [--deny-domain D ...] [--allow-local] [--env NAME ...] [--timeout DUR] [--explain] -- CMD ARGS...")
		return 2
	}
	if len(args) == 0 {
		return usage()
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	switch args[0] {
	case "check":
		return sandboxCheck(args[1:], logger, stdout, stderr)
	case "cache":
		return sandboxCache(args[1:], stdout, stderr)
	case "exec":
		return sandboxExec(args[1:], logger, stdout, stderr)
	default:
		return usage()
	}
}

// sandboxCheck says which backend commands get and, for a workspace, what
// its toolchains are given (host caches, settings), so a person can see why
// a build inside the sandbox finds or misses its dependencies.
func sandboxCheck(args []string, logger *slog.Logger, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("starter sandbox check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cwd, _ := os.Getwd()
	ws := fs.String("workspace", cwd, "workspace whose provisioning to show")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	sb, err := sandbox.New(sandbox.Config{Logger: logger})
	if err != nil {
		fmt.Fprintln(stderr, "sandbox:", err)
		return 1
	}
	name, why := sb.Backend()
	fmt.Fprintf(stdout, "backend: %s\nwhy: %s\n", name, why)
	if name != sandbox.BackendBwrap {
		// No silent fallback: say what jobs will do and how to fix it.
		fmt.Fprintln(stdout, "note:", sandbox.UnavailableHelp(why))
		return 0
	}
	canon, err := pathguard.CanonicalWorkspace(*ws)
	if err != nil {
		fmt.Fprintln(stderr, "sandbox:", err)
		return 1
	}
	loaded, _, _, err := workspaceSandbox(canon)
	if err != nil {
		fmt.Fprintln(stderr, "settings:", err)
		return 1
	}
	lines, err := sandbox.Provisions(sb, canon, toolchainRequest(canon, loaded.Settings.Sandbox))
	if err != nil {
		fmt.Fprintln(stderr, "sandbox:", err)
		return 1
	}
	fmt.Fprintln(stdout, "workspace:", canon)
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	return 0
}

// toolchainRequest is the part of a request the provisioning depends on,
// from a workspace's sandbox settings.
func toolchainRequest(ws string, ss approval.SandboxSettings) sandbox.Request {
	req := sandbox.Request{Workspace: ws, Network: ss.Network}
	if ss.Toolchains != nil {
		req.Toolchains, req.ToolchainsSet = *ss.Toolchains, true
	}
	return req
}

// sandboxCache lists the per-workspace caches, or clears them.
func sandboxCache(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("starter sandbox cache", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ws := fs.String("workspace", "", "only this workspace's caches (default: every workspace's)")
	clear := fs.Bool("clear", false, "remove the caches (waits for a command using them to end)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	root, err := sandbox.CacheDir(sandbox.Config{})
	if err != nil {
		fmt.Fprintln(stderr, "sandbox:", err)
		return 1
	}
	if *ws != "" {
		canon, err := pathguard.CanonicalWorkspace(*ws)
		if err != nil {
			fmt.Fprintln(stderr, "sandbox:", err)
			return 1
		}
		*ws = canon
	}
	infos, err := provision.ListCaches(root)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *clear {
		if *ws != "" {
			infos = []provision.CacheInfo{{Workspace: *ws}}
		}
		for _, info := range infos {
			removed, err := provision.ClearCache(root, info.Workspace)
			if err != nil {
				fmt.Fprintln(stderr, err)
				return 1
			}
			if removed {
				fmt.Fprintf(stdout, "cleared %s (%s)\n", info.Workspace, provision.FormatBytes(info.Bytes))
			} else {
				fmt.Fprintf(stdout, "no cache for %s\n", info.Workspace)
			}
		}
		return 0
	}
	fmt.Fprintf(stdout, "workspace caches in %s (read-write in each workspace's sandbox, nothing shared):\n", root)
	var total int64
	shown := 0
	for _, info := range infos {
		if *ws != "" && info.Workspace != *ws {
			continue
		}
		shown++
		total += info.Bytes
		fmt.Fprintf(stdout, "%10s  last used %s  %s\n", provision.FormatBytes(info.Bytes), info.LastUsed.Format(time.DateTime), info.Workspace)
	}
	if shown == 0 {
		fmt.Fprintln(stdout, "  none")
	}
	fmt.Fprintf(stdout, "total %s\n", provision.FormatBytes(total))
	return 0
}

func sandboxExec(args []string, logger *slog.Logger, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("starter sandbox exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cwd, _ := os.Getwd()
	ws := fs.String("workspace", cwd, "workspace directory (read-write inside the sandbox)")
	var f execFlags
	fs.DurationVar(&f.timeout, "timeout", sandbox.DefaultTimeout, "kill the command after this long")
	fs.BoolVar(&f.allowLocal, "allow-local", false, "let allowed domains resolve to local/private addresses")
	explain := fs.Bool("explain", false, "print what the settings' Read/Edit deny rules mask, before running")
	fs.Var(&f.allow, "allow-domain", "domain the command may reach through the proxy (repeatable; *.example.com for subdomains)")
	fs.Var(&f.deny, "deny-domain", "domain always refused (repeatable; beats --allow-domain)")
	fs.Var(&f.env, "env", "worker environment variable to pass through (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "starter sandbox exec: no command (put it after --)")
		return 2
	}
	canon, err := pathguard.CanonicalWorkspace(*ws)
	if err != nil {
		fmt.Fprintln(stderr, "sandbox:", err)
		return 1
	}
	loaded, readDeny, editDeny, err := workspaceSandbox(canon)
	if err != nil {
		fmt.Fprintln(stderr, "settings:", err)
		return 1
	}
	if *explain {
		explainMasks(stderr, canon, readDeny, editDeny)
	}
	for _, what := range loaded.Ignored {
		fmt.Fprintln(stderr, "settings: workspace not trusted, ignored:", what)
	}
	ss := loaded.Settings.Sandbox
	// One command per process: a passed probe of an earlier one serves, and
	// so does the git identity it read.
	sb, err := sandbox.New(sandbox.Config{Logger: logger, FailIfUnavailable: ss.FailIfUnavailable,
		ProbeCache: probecache.Default(), IdentityCache: probecache.DefaultIdentity()})
	if err != nil {
		fmt.Fprintln(stderr, "sandbox:", err)
		return 1
	}
	req := f.request(canon, argv, ss, readDeny, editDeny)
	req.Stdout, req.Stderr = stdout, stderr
	return runInSandbox(sb, req, stderr)
}

// execFlags are `sandbox exec`'s flags about the run.
type execFlags struct {
	timeout          time.Duration
	allowLocal       bool
	allow, deny, env cmdline.MultiFlag
}

// request is the run the flags and the workspace's settings ask for. The
// settings apply as they would to a job: their domains, environment names
// and toolchains join the flags, and their Read and Edit deny rules are
// masked in the sandbox.
func (f execFlags) request(ws string, argv []string, ss approval.SandboxSettings, readDeny, editDeny []string) sandbox.Request {
	req := toolchainRequest(ws, ss)
	req.Argv, req.Timeout, req.ReadDeny, req.EditDeny = argv, f.timeout, readDeny, editDeny
	req.Env = append(append([]string{}, f.env...), ss.Env...)
	req.Network = netpolicy.Policy{AllowedDomains: f.allow, DeniedDomains: f.deny, AllowLocalBinding: f.allowLocal}.Join(ss.Network)
	// The user runs this command themselves, so their own allowUnsandboxed
	// is consent enough; a workspace cannot grant it.
	req.AllowUnconfined = ss.AllowUnsandboxed && !ss.FailIfUnavailable
	return req
}

// runInSandbox runs req, Ctrl-C stopping it the way a timeout does, and
// returns the exit code to give.
func runInSandbox(sb sandbox.Sandbox, req sandbox.Request, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := sb.Run(ctx, req)
	// The cache's size is recorded before the process ends.
	sandbox.WaitIdle(sb)
	if err != nil {
		fmt.Fprintln(stderr, "sandbox:", err)
		if errors.Is(err, context.Canceled) {
			return 130
		}
		return 1
	}
	return reportSandboxRun(stderr, res)
}

// workspaceSandbox is what a workspace's settings say about its sandbox: the
// settings as a job would load them, and the paths their Read and Edit deny
// rules mask.
func workspaceSandbox(ws string) (loaded settingsfile.Loaded, readDeny, editDeny []string, err error) {
	configDir, _ := os.UserConfigDir()
	if loaded, err = settingsfile.Load(configDir, ws); err != nil {
		return loaded, nil, nil, err
	}
	home, _ := os.UserHomeDir()
	readDeny, editDeny, err = approval.SandboxDeniesOf(loaded.Settings, approval.Env{Workspace: ws, Home: home})
	return loaded, readDeny, editDeny, err
}

// reportSandboxRun says how the command ended, on stderr, and returns its
// exit code as a process exit code.
func reportSandboxRun(stderr io.Writer, res sandbox.Result) int {
	if res.Note != "" {
		fmt.Fprintln(stderr, "sandbox note:", res.Note)
	}
	if res.Truncated {
		fmt.Fprintln(stderr, "sandbox: output truncated")
	}
	if res.Killed {
		fmt.Fprintf(stderr, "sandbox: killed (%s) after %s\n", res.KillReason, res.Duration.Round(time.Millisecond))
	}
	if res.ExitCode < 0 || res.ExitCode > 255 {
		return 255
	}
	return res.ExitCode
}

// explainMasks prints what the deny rules mask right now.
func explainMasks(w io.Writer, ws string, readDeny, editDeny []string) {
	fmt.Fprintf(w, "deny rules: read %q, edit %q\n", readDeny, editDeny)
	plan, err := masks.Expand(ws, readDeny, editDeny)
	if err != nil {
		fmt.Fprintln(w, "masks:", err)
		return
	}
	for _, m := range plan.Masks {
		what := map[masks.Kind]string{masks.Hide: "hidden   ", masks.ReadOnly: "read-only"}[m.Kind]
		extra := ""
		if m.Missing {
			extra = " (does not exist: cannot be created)"
		}
		fmt.Fprintf(w, "mask %s %s%s  [%s]\n", what, m.Path, extra, m.Rule)
	}
}
