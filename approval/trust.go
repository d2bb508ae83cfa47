package approval

import "fmt"

// A repository can carry .custos/settings.json. Read from a workspace nobody
// has vouched for, those files may only narrow what custos does: their deny
// and ask rules, denied domains and failIfUnavailable apply, but allow rules,
// hooks (commands run on the host), permissive modes, allowed domains, local
// binding, environment pass-through and language server commands (run on
// the worker) are ignored until the user trusts the workspace. Otherwise cloning a hostile repository and running custos in it
// would hand the repository the keys: `"allow": ["Bash"]`, `"env":
// ["OPENAI_API_KEY"]` and an allowed domain are all an injected prompt needs.
// Restrict is that narrowing; settingsfile applies it to the files of a
// workspace the user's settings do not trust.

// Restrict keeps only what narrows custos' rights and names what it dropped.
func Restrict(s Settings) (Settings, []string) {
	var ignored []string
	out := Settings{Permissions: Permissions{Ask: s.Permissions.Ask, Deny: s.Permissions.Deny,
		// Refusing bypass only narrows.
		DisableBypass: s.Permissions.DisableBypass},
		// Approvals only make calls wait for more people, and identities
		// only take people out of the count: both narrow.
		Approvals: s.Approvals, Identities: s.Identities}
	if n := len(s.Permissions.Allow); n > 0 {
		ignored = append(ignored, fmt.Sprintf("permissions.allow (%d %s)", n, map[bool]string{true: "rule", false: "rules"}[n == 1]))
	}
	switch m := s.Permissions.DefaultMode; m {
	case "", ModeDefault, ModePlan, ModeDontAsk:
		out.Permissions.DefaultMode = m
	default:
		ignored = append(ignored, fmt.Sprintf("permissions.defaultMode %q", m))
	}
	if len(s.Hooks) > 0 {
		ignored = append(ignored, "hooks (commands run on the host)")
	}
	if len(s.LSP) > 0 {
		ignored = append(ignored, "lsp (language server commands)")
	}
	out.Sandbox.FailIfUnavailable = s.Sandbox.FailIfUnavailable
	out.Sandbox.Network.DeniedDomains = s.Sandbox.Network.DeniedDomains
	// sandbox.toolchains only ever narrows (MergeSettings intersects it).
	out.Sandbox.Toolchains = s.Sandbox.Toolchains
	if len(s.Sandbox.Network.AllowedDomains) > 0 {
		ignored = append(ignored, "sandbox.network.allowedDomains")
	}
	if s.Sandbox.Network.AllowLocalBinding {
		ignored = append(ignored, "sandbox.network.allowLocalBinding")
	}
	if len(s.Sandbox.Env) > 0 {
		ignored = append(ignored, "sandbox.env")
	}
	return out, ignored
}
