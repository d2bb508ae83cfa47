package activities

import (
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/sandbox"
)

// hiddenFiles expands the job's Read-deny rules the way the sandbox does
// for Bash, so that Glob and Grep leave out exactly what a command could
// not read either (hard links and symlink targets included). ws is the
// canonical workspace. An error means the rules cannot be enforced, and
// the caller refuses (fail closed).
func hiddenFiles(ws string, readDeny []string) (sandbox.MaskPlan, error) {
	return sandbox.ExpandMasks(ws, readDeny, nil)
}

// sandboxStatus is what the workflow learns about the worker's sandbox
// (issue 8 §4), recorded in history with the settings.
func sandboxStatus(sb sandbox.Sandbox, ss approval.SandboxSettings) approval.SandboxStatus {
	if sb == nil {
		return approval.SandboxStatus{}
	}
	name, why := sb.Backend()
	st := approval.SandboxStatus{Backend: name, Why: why}
	if name != sandbox.BackendBwrap {
		st.Unconfined = true
		st.Why = sandbox.UnavailableHelp(why)
		st.AllowUnconfined = ss.AllowUnsandboxed && !ss.FailIfUnavailable
	}
	return st
}
