package activities

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/custos-dev/custos/lsp"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/sandbox/provision"
	"github.com/custos-dev/custos/sandbox/sysview"
)

// SandboxStarter runs language servers in sb: the workspace read-only,
// the Read deny rules' masks over it, no network, the workspace's
// toolchains provisioned as for a Bash command (for gopls, the module
// cache and GOPROXY=off). A worker without bubblewrap runs none: the
// fallback never runs a server unconfined.
func SandboxStarter(sb sandbox.Sandbox) lsp.Starter {
	return func(_ context.Context, s lsp.Spec) (*lsp.Process, error) {
		if sb == nil {
			return nil, errors.New("this worker has no sandbox to run a language server in")
		}
		if name, why := sb.Backend(); name != sandbox.BackendBwrap {
			return nil, errors.New(sandbox.UnavailableHelp(why))
		}
		if err := visibleInSandbox(s.Argv[0], s.Workspace); err != nil {
			return nil, err
		}
		// Not the request's context: the server outlives the call that
		// started it, until the pool stops it (Kill).
		p, err := sandbox.Start(context.Background(), sb, sandbox.Request{
			Workspace: s.Workspace, Argv: withServerCache(s.Argv), ReadOnlyWorkspace: true, ReadDeny: s.ReadDeny})
		if err != nil {
			return nil, fmt.Errorf("start %s in the sandbox: %w", s.Argv[0], err)
		}
		return &lsp.Process{Stdin: p.Stdin, Stdout: p.Stdout, Kill: p.Stop, Wait: func() error {
			res, err := p.Wait()
			if err == nil {
				err = fmt.Errorf("exit code %d", res.ExitCode)
				if res.Killed {
					err = fmt.Errorf("killed: %s", res.KillReason)
				}
			}
			if tail := strings.TrimSpace(p.Stderr()); tail != "" {
				err = fmt.Errorf("%w; it said: %s", err, lastLine(tail))
			}
			return err
		}}, nil
	}
}

// serverCache is where a sandboxed server keeps what it computed, in the
// workspace's own cache (provision.CacheInside, kept between runs like
// its go-build cache): gopls' file cache there makes a restarted server
// warm in seconds, where the sandbox's fresh home would have it check the
// whole module graph again, minutes of background work that slows every
// answer meanwhile.
const serverCache = provision.CacheInside + "/lsp"

// withServerCache runs argv with its caches in serverCache: gopls reads
// GOPLSCACHE, other servers the XDG cache directory.
func withServerCache(argv []string) []string {
	return append([]string{"/usr/bin/env", "GOPLSCACHE=" + serverCache + "/gopls", "XDG_CACHE_HOME=" + serverCache}, argv...)
}

// visibleInSandbox refuses, with what to do, a server the sandbox cannot
// see: it shows the system's directories (sysview.RootEntries) and the
// workspace, not a home directory, so not where go install puts gopls
// ($GOBIN, $GOPATH/bin, ~/go/bin), which lsp.Defaults finds last. A bare
// name is looked up on the sandbox's PATH.
func visibleInSandbox(prog, workspace string) error {
	if !filepath.IsAbs(prog) {
		return nil
	}
	for _, dir := range append(slices.Clone(sysview.RootEntries), workspace) {
		if rel, err := filepath.Rel(dir, prog); err == nil && filepath.IsLocal(rel) {
			return nil
		}
	}
	where := "the sandbox shows the system's directories (" + strings.Join(sysview.RootEntries, ", ") + ") and the workspace"
	if lsp.GoInstalled(prog) {
		where += ", not the home directory or the Go bin directory where go install put it"
	}
	return fmt.Errorf("%s is on the host but not visible in the sandbox: %s. Install the server for the whole system (as root: GOBIN=/usr/local/bin go install golang.org/x/tools/gopls@latest, or make deps) or name one in those directories in the settings' \"lsp\"",
		prog, where)
}

// lastLine is the last line of s.
func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
