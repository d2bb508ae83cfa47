package approval

import (
	"cmp"
	"encoding/json"

	"github.com/custos-dev/custos/hooks"
)

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

// Evaluator is layers 1-3 for one call: Policy.Evaluate, or a wrapper of it
// (the workflow records each verdict in history, so a job replays with the
// verdicts it was given even when a later release judges differently).
type Evaluator func(c Call, m Mode) Verdict

// Findings is what layers 1-3 and 4 found for one call, gathered by the
// caller (the workflow, or `policy check`): Rules, layers 1-3 on the call;
// then, only when Rules.Open(), Hook, the first decision of the hooks (nil
// when none decided). Hooks are run by the caller and handed in as data:
// approval never calls back into the workflow, and Decide is the one
// function both callers weigh the layers with.
type Findings struct {
	Rules Verdict
	Hook  *hooks.Result
}

// Open reports whether layers 1-3 left the call to the hooks and a person.
func (v Verdict) Open() bool { return v.Decision != Allow && v.Decision != Deny }

// Decide is layers 1-4 for call c in mode m, from what the layers found. A
// hook's rewritten input is a new call and passes layers 1-3 again (eval),
// so no hook can launder a command past a system or user deny rule; a
// rewrite that the rules would send to a person still goes to a person.
func Decide(c Call, m Mode, eval Evaluator, f Findings) Prelim {
	out := Prelim{Input: c.Input}
	if !f.Rules.Open() {
		out.Verdict = f.Rules
		return out
	}
	// Rules is Ask (an ask rule, or a command the rules cannot read) or Continue.
	forced := f.Rules.Decision == Ask
	out.AskReason = f.Rules.Reason
	if hr := f.Hook; hr != nil {
		out.Hook = hr.Hook
		if len(hr.ModifiedInput) > 0 {
			var obj map[string]any
			if err := json.Unmarshal(hr.ModifiedInput, &obj); err != nil || obj == nil {
				out.Verdict = Verdict{Decision: Deny, Layer: LayerHook, Rule: hr.Hook,
					Reason: "hook rewrote the input into something that is not a JSON object"}
				return out
			}
			out.Modified, out.Input = true, hr.ModifiedInput
			switch v2 := eval(Call{Tool: c.Tool, Input: hr.ModifiedInput}, m); v2.Decision {
			case Deny:
				out.Verdict = v2
				return out
			case Ask:
				forced, out.AskReason = true, v2.Reason
			case Allow:
				if hr.Decision != hooks.Deny && hr.Decision != hooks.Ask {
					out.Verdict = v2
					return out
				}
			}
		}
		switch hr.Decision {
		case hooks.Deny:
			out.Verdict = Verdict{Decision: Deny, Layer: LayerHook, Rule: hr.Hook, Reason: cmp.Or(hr.Reason, "denied by hook")}
			return out
		case hooks.Allow:
			if !forced {
				out.Verdict = Verdict{Decision: Allow, Layer: LayerHook, Rule: hr.Hook, Reason: hr.Reason}
				return out
			}
			// An ask rule, or a command no rule can read, still needs a person.
		case hooks.Ask:
			out.AskReason = cmp.Or(hr.Reason, out.AskReason)
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
