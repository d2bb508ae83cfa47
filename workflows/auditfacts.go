package workflows

import "github.com/custos-dev/custos/hooks"

// hookSaid is what the layer-4 hook that decided said, for the audit
// (AuditRecord.HookDecision), so `starter policy replay` can weigh the same
// answer again without running the hook; "" when none decided or it only
// rewrote the input.
func hookSaid(r *hooks.Result) hooks.Decision {
	if r == nil {
		return ""
	}
	return r.Decision
}
