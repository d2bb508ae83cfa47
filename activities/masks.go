package activities

import (
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/sandbox"
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

// denyRulesNote goes with a failed Bash result when deny rules were in effect.
const denyRulesNote = "the job's deny rules are enforced in the sandbox: Read-denied paths are unreadable (Permission denied) and Edit-denied paths read-only (Read-only file system, Device or resource busy); that may be why the command failed"
