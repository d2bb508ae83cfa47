package approval

import (
	"cmp"
	"fmt"
	"strings"
)

// How the policy meets the OS sandbox.
//
// Deny rules inside: the Read and Edit deny rules are also enforced inside the sandbox, on
// whatever a command does; SandboxDenies lists their path patterns for it.
//
// No sandbox: when the worker has no OS sandbox, Bash is refused, unless the
// user's own settings say "sandbox": {"allowUnsandboxed": true}; then no
// Bash call is allowed by a rule, a mode or a hook: each goes to a person,
// told that the command will run unconfined. Deny rules (system and user)
// still deny.

// SandboxStatus is what the Bash worker's OS sandbox can do, as the
// LoadSettings activity found it; it travels in Env so the workflow decides
// deterministically. The zero value (histories from before it existed)
// means isolated.
type SandboxStatus struct {
	// Backend names the sandbox backend ("bwrap", "fallback").
	Backend string `json:"backend,omitempty"`
	// Why says why that backend (for an unconfined one: why bubblewrap
	// cannot run).
	Why string `json:"why,omitempty"`
	// Help, for an unconfined backend, is the refusal a Bash call gets:
	// why, and how to fix it.
	Help string `json:"help,omitempty"`
	// Unconfined: commands would run without OS isolation.
	Unconfined bool `json:"unconfined,omitempty"`
	// AllowUnconfined: the user's settings allow that (allowUnsandboxed,
	// and no failIfUnavailable anywhere), each command asked.
	AllowUnconfined bool `json:"allowUnconfined,omitempty"`
	// Gives says, a line each, what the workspace's commands are given:
	// toolchains found, the host's caches read-only, the workspace's own
	// caches, the git identity.
	Gives []string `json:"gives,omitempty"`
}

// RuleSandboxRequired and RuleUnconfined name the verdicts given when there is no sandbox.
const (
	RuleSandboxRequired = "sandbox-required"
	RuleUnconfined      = "unconfined-bash"
)

// SandboxDenies returns the path patterns of the deny rules the sandbox
// enforces on commands: Read rules (read) and Edit and Write rules (edit),
// learned ones included, in list order. Patterns are in the rule engine's
// normalised form: "~" expanded, "./" dropped, a trailing "/" turned into
// "/**", relative to the workspace unless absolute; a pattern without "/"
// matches a base name at any depth; "re:" marks a regular expression;
// "**" stands for a rule without specifier (every path). There are no
// system presets for these tools; the protected paths are the sandbox's own.
func (p *Policy) SandboxDenies() (read, edit []string) {
	for _, r := range p.deny.rules {
		var spec string
		switch r.kind {
		case kindAny:
			spec = "**"
		case kindPath:
			spec = r.value
		case kindRegexp:
			spec = "re:" + r.re.String()
		default:
			continue
		}
		switch r.tool {
		case "Read":
			read = appendNew(read, spec)
		case "Edit", "Write":
			edit = appendNew(edit, spec)
		}
	}
	return read, edit
}

// SandboxDeniesOf is SandboxDenies of the policy s compiles to, every rule
// parsed as Compile parses it, without the check of the rule tables' own
// examples that Compile makes once per process (tablesChecked). Those tables
// judge commands; a caller that only masks paths, such as starter sandbox
// exec, which runs one command per process and asks nothing of them, would
// pay 7-14 ms of its start for a check whose verdict it never uses.
func SandboxDeniesOf(s Settings, env Env) (read, edit []string, err error) {
	p, err := compile(s, env)
	if err != nil {
		return nil, nil, err
	}
	read, edit = p.SandboxDenies()
	return read, edit, nil
}

func appendNew(list []string, s string) []string {
	if contains(list, s) {
		return list
	}
	return append(list, s)
}

// confine applies the no-sandbox rule (above) to a verdict of layers 1-3.
func (p *Policy) confine(c Call, v Verdict) Verdict {
	sb := p.env.Sandbox
	if c.Tool != "Bash" || !sb.Unconfined || v.Decision == Deny {
		return v
	}
	if !sb.AllowUnconfined {
		return Verdict{Decision: Deny, Layer: LayerRules, Rule: RuleSandboxRequired, System: true,
			Reason: "Bash is refused: " + cmp.Or(sb.Help, sb.Why, "the worker has no OS sandbox")}
	}
	reason := fmt.Sprintf("UNCONFINED: this command will run WITHOUT OS isolation (no sandbox on the worker: %s; "+
		"sandbox.allowUnsandboxed is set), with the worker's access to files and network; "+
		"Read/Edit deny rules are not enforced on what it touches", sb.Why)
	if v.Decision == Ask && v.Reason != "" {
		reason += "; also: " + v.Reason
	} else if v.Decision == Allow {
		reason += "; the rules or mode would have allowed it (" + strings.TrimSpace(v.Reason) + "), but unconfined commands always need a person"
	}
	return Verdict{Decision: Ask, Layer: LayerRules, Rule: RuleUnconfined, System: true, Reason: reason}
}

// UserOnly drops what only the user's own settings may set from a
// workspace's settings file, trusted or not, and names it.
func UserOnly(s Settings) (Settings, []string) {
	var dropped []string
	if s.Sandbox.AllowUnsandboxed {
		s.Sandbox.AllowUnsandboxed = false
		dropped = append(dropped, "sandbox.allowUnsandboxed (honoured only from the user's settings)")
	}
	if len(s.Approval.Escalation) > 0 {
		// A workspace must not send its calls' details anywhere.
		s.Approval.Escalation = nil
		dropped = append(dropped, "approval.escalation (honoured only from the user's settings)")
	}
	if s.Retention != (RetentionSettings{}) {
		// What is removed from the state directory is the user's call:
		// a workspace must not shorten the life of the audits of its jobs.
		s.Retention = RetentionSettings{}
		dropped = append(dropped, "retention (honoured only from the user's settings)")
	}
	return s, dropped
}
