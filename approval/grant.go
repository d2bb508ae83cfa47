package approval

import (
	"errors"
	"fmt"
	"time"
)

// ErrGrant is wrapped by every reason a grant cannot be given or does not
// apply to a call.
var ErrGrant = errors.New("grant refused")

// MaxGrant bounds how long a grant may last: past it, a person saves a
// rule (Always) and can read it in their settings.
const MaxGrant = 7 * 24 * time.Hour

// GrantInfo names, in an audit record, the grant that allowed a call:
// who gave it, when, for what scope and until when.
type GrantInfo struct {
	ID      string    `json:"id"`
	Rule    string    `json:"rule"`
	Scope   string    `json:"scope"`
	By      string    `json:"by,omitempty"`
	Channel string    `json:"channel,omitempty"`
	At      time.Time `json:"at"`
	Until   time.Time `json:"until"`
}

// Grantable reports whether a grant may stand in for a person's answer to
// a call whose layers 1-3 said rules (and, when a hook decided, hook): a
// grant is an allow rule that only ever applies where a person would be
// asked because nothing allowed the call. A call an ask rule, an
// unreadable command, an unconfined sandbox or a hook's ask sends to a
// person must be asked every time.
func Grantable(rules Verdict, hookAsked bool) error {
	if rules.Decision == Ask {
		return fmt.Errorf("%w: this call must be asked every time (%s)", ErrGrant, rules.Reason)
	}
	if rules.Decision != Continue {
		return fmt.Errorf("%w: the rules decided this call (%s)", ErrGrant, rules.Decision)
	}
	if hookAsked {
		return fmt.Errorf("%w: a hook asks for a person on this call", ErrGrant)
	}
	return nil
}

// GrantCovers says why rule, given as a grant, would not allow call c in
// mode m, or nil: the rule must parse, be about c's tool, and with it as
// one more allow rule layers 1-3 must allow c (so a deny rule, an ask
// rule, a system rule or plan mode still win over it).
func (p *Policy) GrantCovers(ruleText string, c Call, m Mode) error {
	r, err := parseRule(ruleText, p.env)
	if err != nil {
		return fmt.Errorf("%w: rule %q: %w", ErrGrant, ruleText, err)
	}
	if !r.appliesTo(c.Tool) {
		return fmt.Errorf("%w: rule %s is not about %s calls", ErrGrant, ruleText, c.Tool)
	}
	with, err := p.WithRule(ListAllow, ruleText)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrGrant, err)
	}
	if v := with.Evaluate(c, m); v.Decision != Allow {
		return fmt.Errorf("%w: rule %s does not allow this call (%s)", ErrGrant, ruleText, v.Reason)
	}
	return nil
}
