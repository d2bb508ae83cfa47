package approval

import (
	"cmp"
	"encoding/json"

	"github.com/custos-dev/custos/hooks"
)

// HookRunner runs layer 4 (tool.approval.pre hooks) for a call and returns
// the first decision, if any. The workflow runs system hooks inline and user
// hooks in an activity; `starter policy check` runs them directly.
type HookRunner func(c Call) (hooks.Result, bool)

// Prelim is the outcome of layers 1-4: either a final verdict, or a call that
// needs a person (layer 5) with the reason to show.
type Prelim struct {
	Verdict    Verdict
	NeedsHuman bool
	AskReason  string
	// Input is what the tool must run with: the model's, or a hook's rewrite.
	Input    json.RawMessage
	Modified bool
	Hook     string
}

// Decide runs layers 1-4. Layers 1-3 are pure; runHooks may be nil (no hooks).
// A hook's rewritten input is a new call and passes layers 1-3 again, so no
// hook can launder a command past a system or user deny rule; a rewrite that
// the rules would send to a person still goes to a person.
func (p *Policy) Decide(c Call, m Mode, runHooks HookRunner) Prelim {
	return p.DecideWith(c, m, p.Evaluate, runHooks)
}

// Evaluator is layers 1-3 for one call: Policy.Evaluate, or a wrapper of it
// (the workflow records each verdict in history, so a job replays with the
// verdicts it was given even when a later release judges differently).
type Evaluator func(c Call, m Mode) Verdict

// DecideWith is Decide with layers 1-3 given by eval.
func (p *Policy) DecideWith(c Call, m Mode, eval Evaluator, runHooks HookRunner) Prelim {
	out := Prelim{Input: c.Input}
	v := eval(c, m)
	if v.Decision == Allow || v.Decision == Deny {
		out.Verdict = v
		return out
	}
	// v is Ask (an ask rule, or a command the rules cannot read) or Continue.
	forced := v.Decision == Ask
	out.AskReason = v.Reason
	if runHooks != nil {
		if hr, ok := runHooks(c); ok {
			out.Hook = hr.Hook
			if len(hr.ModifiedInput) > 0 {
				var obj map[string]any
				if err := json.Unmarshal(hr.ModifiedInput, &obj); err != nil || obj == nil {
					out.Verdict = Verdict{Decision: Deny, Layer: LayerHook, Rule: hr.Hook,
						Reason: "hook rewrote the input into something that is not a JSON object"}
					return out
				}
				out.Modified, out.Input = true, hr.ModifiedInput
				v2 := eval(Call{Tool: c.Tool, Input: hr.ModifiedInput}, m)
				switch v2.Decision {
				case Deny:
					out.Verdict = v2
					return out
				case Ask:
					forced, out.AskReason = true, v2.Reason
				case Allow:
					if hr.Decision != "deny" && hr.Decision != "ask" {
						out.Verdict = v2
						return out
					}
				}
			}
			switch hr.Decision {
			case "deny":
				out.Verdict = Verdict{Decision: Deny, Layer: LayerHook, Rule: hr.Hook, Reason: cmp.Or(hr.Reason, "denied by hook")}
				return out
			case "allow":
				if !forced {
					out.Verdict = Verdict{Decision: Allow, Layer: LayerHook, Rule: hr.Hook, Reason: hr.Reason}
					return out
				}
				// An ask rule, or a command no rule can read, still needs a person.
			case "ask":
				out.AskReason = cmp.Or(hr.Reason, out.AskReason)
			}
		}
	}
	if m == ModeDontAsk {
		out.Verdict = Verdict{Decision: Deny, Layer: LayerMode, Reason: "mode dontAsk denies whatever would need a person"}
		return out
	}
	out.NeedsHuman = true
	out.Verdict = Verdict{Decision: Ask, Layer: LayerHuman, Reason: out.AskReason}
	return out
}
