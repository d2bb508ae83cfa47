package activities

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/sandbox/masks"
)

// sandboxStatus is what the workflow learns about the worker's sandbox (so
// that no call falls back to running unconfined unseen), recorded in history
// with the settings.
func sandboxStatus(sb sandbox.Sandbox, ss approval.SandboxSettings, ws string) approval.SandboxStatus {
	if sb == nil {
		return approval.SandboxStatus{}
	}
	name, why := sb.Backend()
	st := approval.SandboxStatus{Backend: name, Why: why}
	// What the workspace's toolchains are given, for the job's first event. A
	// failure to say is said, not fatal: the Bash call meets the same failure
	// and reports it.
	if name != sandbox.BackendBwrap {
		st.Unconfined = true
		st.Help = sandbox.UnavailableHelp(why)
		st.AllowUnconfined = ss.AllowUnsandboxed && !ss.FailIfUnavailable
		return st
	}
	gives, err := sandbox.Provisions(sb, ws, sandbox.Request{Workspace: ws, Network: ss.Network,
		Toolchains: toolchainList(ss.Toolchains), ToolchainsSet: ss.Toolchains != nil})
	if err != nil {
		gives = []string{"toolchains: " + err.Error()}
	}
	st.Gives = gives
	return st
}

// deniedTarget checks the real path a file tool is about to touch against the
// deny patterns (a deny rule holds whichever tool and whichever name). The
// policy judged the path as the model wrote it; through a symlink, a
// symlinked directory, or (for reading) a hard link, that can be a denied
// file. It returns the refusal text, or "".
func deniedTarget(tool string, tgt *fileTarget, patterns []string, read bool) string {
	if len(patterns) == 0 {
		return ""
	}
	refuse := func(why string) string {
		return fmt.Sprintf("%s: %s is denied by a deny rule %s under its real name", tool, tgt.show, why)
	}
	if read {
		h, err := newHider(tgt.ws, patterns)
		if err != nil {
			return fmt.Sprintf("%s: %v", tool, err)
		}
		hide, err := h.hidesFile(tgt.root, tgt.show)
		if err != nil {
			return fmt.Sprintf("%s: %v", tool, err)
		}
		if hide {
			return refuse("(Read)")
		}
		return ""
	}
	rule, err := masks.DeniedBy(tgt.ws, tgt.show, false, patterns)
	if err != nil {
		return fmt.Sprintf("%s: %v", tool, err)
	}
	if rule != "" {
		return refuse("(" + rule + ")")
	}
	if anchored := anchoredPatterns(patterns); len(anchored) > 0 {
		plan, err := masks.Expand(tgt.ws, nil, anchored)
		if err != nil {
			return fmt.Sprintf("%s: %v", tool, err)
		}
		if plan.Covers(tgt.show) {
			return refuse("(through a symlinked directory)")
		}
	}
	return ""
}

// anchoredPatterns are the patterns whose match depends on the directories
// of a path (a "/" in them), not only on its base name: those a symlinked
// directory can lead around, which a pruned expansion finds.
func anchoredPatterns(patterns []string) []string {
	var out []string
	for _, p := range patterns {
		if strings.Contains(p, "/") && !strings.HasPrefix(p, "re:") {
			out = append(out, p)
		}
	}
	return out
}

// hider decides which files Glob and Grep leave out: what the deny
// patterns name (the path or a directory above it), what an anchored
// pattern names through a symlinked directory (a pruned expansion), and
// other names of a hidden file (hard links: the full expansion, computed
// only when a file has more than one name). Unlike a full expansion up
// front, it works on workspaces of any size.
type hider struct {
	ws       string
	patterns []string
	match    *masks.DenyMatcher
	anchored masks.Plan
	full     *masks.Plan
}

// newHider returns nil when there is nothing to hide.
func newHider(ws string, patterns []string) (*hider, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	m, err := masks.NewDenyMatcher(ws, patterns)
	if err != nil {
		return nil, err
	}
	h := &hider{ws: ws, patterns: patterns, match: m}
	if h.anchored, err = masks.Expand(ws, anchoredPatterns(patterns), nil); err != nil {
		return nil, err
	}
	return h, nil
}

// hides reports whether the name rel is hidden.
func (h *hider) hides(rel string) bool {
	return h != nil && (h.match.Match(rel, false) != "" || h.anchored.Hides(rel))
}

// hidesFile reports whether the file rel is hidden, under this name or
// (a hard link) another, as the sandbox hides it from commands.
func (h *hider) hidesFile(root *os.Root, rel string) (bool, error) {
	if h == nil {
		return false, nil
	}
	if h.hides(rel) {
		return true, nil
	}
	fi, err := root.Lstat(filepath.FromSlash(rel))
	if err != nil {
		return false, nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink < 2 {
		return false, nil
	}
	if h.full == nil {
		plan, err := masks.Expand(h.ws, h.patterns, nil)
		if err != nil {
			return false, err
		}
		h.full = &plan
	}
	return h.full.Hides(rel), nil
}

// denyRulesNote goes with a failed Bash result when deny rules were in effect.
const denyRulesNote = "the job's deny rules are enforced in the sandbox: Read-denied paths are unreadable (Permission denied) and Edit-denied paths read-only (Read-only file system, Device or resource busy); that may be why the command failed"
