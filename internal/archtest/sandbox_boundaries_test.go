package archtest

// The sandbox's packages by concern: the root runs a command (the Sandbox
// facade, bubblewrap, the profile, fallback, seccomp, cgroups, the mount
// step); every package below it owns one concern and answers in the shared
// vocabulary (mount.Mount, hostfs), never reaching back into the root, so
// that one can be read, tested and changed without the run. The policy
// types the sandbox shares with approval (netpolicy, toolchains) are pure
// leaves the workflow may import.
func init() {
	below := map[string]string{
		"mount":        "the vocabulary of a mount",
		"hostfs":       "the host file-system helpers the others share",
		"gitdir":       "the one description of a git directory",
		"pathguard":    "the file tools' guard",
		"overlaymerge": "applying an upper layer to the workspace",
		"netproxy":     "the egress proxy",
		"sysview":      "the system a command sees",
		"masks":        "the deny rules' masks",
		"protect":      "the protected-paths plan",
		"provision":    "the toolchains' provisioning",
		"hostguard":    "the host guard",
		"probecache":   "a passed probe kept between processes",
	}
	for name, what := range below {
		boundaries = append(boundaries, boundary{
			pkg:        mod + "/sandbox/" + name,
			transitive: []string{mod + "/sandbox", mod + "/activities", mod + "/workflows", mod + "/approval"},
			why:        "sandbox/" + name + " is " + what + ": a concern below the run, which the root composes; it never imports the root, nor the policy or the tools above the sandbox",
		})
	}
	for _, leaf := range []string{"netpolicy", "toolchains"} {
		boundaries = append(boundaries, boundary{
			pkg:        mod + "/" + leaf,
			transitive: noIO,
			direct:     []string{"os"},
			why:        leaf + " is a fact the settings, the workflow's policy and the sandbox share: data and pure functions, no I/O, so the workflow may import it",
		})
	}
}
