package sandbox

import "fmt"

// No isolation, no silent fallback: when bubblewrap cannot run,
// New still returns the fallback backend (so the worker starts and can say
// why), but its Run refuses every command unless the request carries
// AllowUnconfined, which only the user's own settings grant
// ("sandbox": {"allowUnsandboxed": true}), and then only for a command a
// person approved knowing it runs unconfined.

// UnavailableHelp is the message a refused command gets: why bubblewrap
// cannot run here and how to fix it.
func UnavailableHelp(why string) string {
	return fmt.Sprintf("the OS sandbox is not available on this worker (%s), so commands are refused. "+
		"To fix it: install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap) and make sure unprivileged "+
		"user namespaces are enabled (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 23.10+ also "+
		"kernel.apparmor_restrict_unprivileged_userns=0; in a container, a seccomp/AppArmor profile that allows them); "+
		"then check with `starter sandbox check`. To run commands WITHOUT isolation instead, each one approved by a "+
		"person, set \"sandbox\": {\"allowUnsandboxed\": true} in your user settings (never honoured from a workspace)", why)
}

// refuseUnconfined is the fallback's gate.
func refuseUnconfined(req Request, why string) error {
	if req.AllowUnconfined {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrUnavailable, UnavailableHelp(why))
}
