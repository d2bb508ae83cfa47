// Package sandbox runs a command in OS isolation: bubblewrap on Linux (its
// own user, mount, PID and network namespaces, a seccomp filter, cgroup
// limits, custos' mount step as the sandbox's PID 1, the workspace on an
// overlay), and an application-level fallback that refuses to run a
// command unless the user's settings allow it. This package is the run:
// the Sandbox facade, the profile and its pure argument builder, the
// backends, seccomp, cgroups and the mount step.
//
// Each concern the run composes is a package below it that never imports
// it (internal/archtest pins that), answering in mount.Mount and hostfs:
//
//   - sysview: the system a command sees (/usr, the /etc view, its identity);
//   - provision: what the workspace's toolchains are given (caches, git identity);
//   - protect: the protected paths kept read-only (over gitdir's layout);
//   - masks: the deny rules' masks;
//   - netproxy: the egress proxy, the only way out;
//   - hostguard: what the command planted for the host, neutralised, and its
//     overlay applied (overlaymerge) only after that check;
//   - pathguard: the file tools' half of the same walls.
package sandbox

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/custos-dev/custos/netpolicy"
	"github.com/custos-dev/custos/sandbox/hostguard"
)

// Request is one command to run for a workspace.
type Request struct {
	Workspace string
	// Argv is the command; Bash passes []string{"bash", "-c", command}.
	Argv    []string
	Timeout time.Duration
	Network netpolicy.Policy
	// Env names extra worker environment variables to pass through (settings).
	Env []string
	// Vars are variables given with their values: an MCP server's own env
	// entry (its secrets, which reach that server alone). Names the sandbox
	// sets itself are refused.
	Vars map[string]string
	// MaxOutput caps each of stdout and stderr kept in Result (bytes); 0 = default.
	MaxOutput int
	// Stdout and Stderr, when set, also receive the output as it is produced.
	Stdout, Stderr io.Writer
	// ReadDeny and EditDeny are the path patterns of the job's Read and Edit
	// deny rules; bubblewrap masks what they match (see masks.go).
	ReadDeny, EditDeny []string
	// AllowUnconfined lets the fallback backend run the command without OS
	// isolation. Only the user's own settings (sandbox.allowUnsandboxed),
	// with a person approving each command, may set it; without it the
	// fallback refuses (see Unavailable).
	AllowUnconfined bool
	// Toolchains narrows the toolchains the sandbox provisions (settings'
	// sandbox.toolchains) when ToolchainsSet: only these, none when empty.
	// Unset, every toolchain found in the workspace is provisioned.
	Toolchains    []string
	ToolchainsSet bool
	// BeforeMerge, when set, is told of the command's overlay upper layer
	// before it is applied to the workspace (hostguard.MergeHook): the
	// job's checkpoint. It is not called for a run without an overlay.
	BeforeMerge hostguard.MergeHook

	// Service runs a long-lived server (an MCP or language server; see
	// Start): no timeout and no output-flood kill, its life is the
	// context's. The fallback backend never runs one, whatever
	// AllowUnconfined says.
	Service bool
	// KillGrace, when set and shorter than the sandbox's (Config's), is
	// this run's time between SIGTERM and SIGKILL: an MCP server's, whose
	// stop a person may be waiting on.
	KillGrace time.Duration
	// Stdin, when set, is the command's standard input (a pipe's read end;
	// an *os.File, so that no goroutine stands between it and the
	// command). Unset, the command reads /dev/null.
	Stdin *os.File
	// ReadOnlyWorkspace shows the workspace read-only, masks included, with
	// no overlay: nothing the command does can change it (a language
	// server). A service without it writes to the workspace directly, as
	// its protected paths allow.
	ReadOnlyWorkspace bool
	// StdoutFile, for a service, is where its standard output goes, a
	// pipe's write end handed to it directly (no copy on the way; Stdout
	// and the Result's Stdout are then unused).
	StdoutFile *os.File
	// Home, for a service, is its own directory on the host (an MCP
	// server's home in custos' state): bound read-write at the sandbox's
	// home, with HOME, the XDG directories, TMPDIR and every tool's cache
	// in it, in place of the workspace's caches (provision.PlanServer).
	Home string
	// ServiceOverlay, for a service, is its own overlay directory
	// (NewServiceOverlay): the workspace is shown through an overlay whose
	// upper layer is there, with the protected paths and the deny rules'
	// masks over it as for a Bash command (no placeholders), so that what
	// the server writes reaches the workspace only once WatchServiceOverlay's
	// Finish has judged and applied it, the server gone.
	ServiceOverlay string

	// bare runs without toolchain provisioning (the start-up probe).
	bare bool
	// probeOverlay runs the probe on an overlay of its workspace (whose
	// upper layer is thrown away): the probe of the overlay itself.
	probeOverlay bool
}

// Result is what a command did.
type Result struct {
	ExitCode  int           `json:"exitCode"`
	Stdout    string        `json:"stdout"`
	Stderr    string        `json:"stderr"`
	Truncated bool          `json:"truncated,omitempty"`
	Duration  time.Duration `json:"duration"`
	Killed    bool          `json:"killed,omitempty"`
	// KillReason says why: "timeout", "output limit", "cpu limit", "memory limit", ...
	KillReason string `json:"killReason,omitempty"`
	Backend    string `json:"backend"`
	// Note is shown to the model with the result, e.g. the fallback warning.
	Note string `json:"note,omitempty"`
	// CacheDir is the workspace's cache directory the run used ("" none).
	CacheDir string `json:"cacheDir,omitempty"`
	// Report is what the host guard did to the command's writes (host
	// config neutralised, writes withheld or not applied).
	hostguard.Report
}

// Sandbox runs commands for a workspace.
type Sandbox interface {
	Run(ctx context.Context, req Request) (Result, error)
	// Backend names the active backend ("bwrap" or "fallback") and why.
	Backend() (name string, why string)
}
