package approval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// MaxAskTimeout bounds a per-rule approval deadline.
const MaxAskTimeout = 7 * 24 * time.Hour

// Duration is a time.Duration written as a string in settings ("20s",
// "30m").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "20s"; a bare number is refused (seconds or
// nanoseconds? nobody can tell).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"20s\" or \"30m\", not %s", b)
	}
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// ApprovalSettings is the "approval" section of settings: how layer 5
// waits for a person.
type ApprovalSettings struct {
	// Escalation are steps taken while a call waits, before its deadline
	// denies it: after After, tell Notify (a channel of the worker). Only
	// the user's own settings may set them (UserOnly): a workspace must
	// not send its calls' details anywhere.
	Escalation []EscalationStep `json:"escalation,omitempty"`
	// AskTimeouts are per-rule deadlines, by ask rule: a call that rule
	// asks about waits that long (instead of the job's approval timeout)
	// before it is denied. Written as {"rule": …, "timeout": …} in
	// permissions.ask.
	AskTimeouts map[string]Duration `json:"askTimeouts,omitempty"`
}

// EscalationStep is one step of approval.escalation.
type EscalationStep struct {
	After Duration `json:"after"`
	// Notify is "slack" or "webhook", a channel the worker has.
	Notify string `json:"notify"`
	// To is, for slack, a channel (C0123…, #name) or a mention to put in
	// the message (<!subteam^S0123>, <@U0123>, <!here>); for webhook, a
	// URL (http(s), signed with the worker's secret). "" uses the
	// worker's own channel or URLs.
	To string `json:"to,omitempty"`
}

// Escalation channels.
const (
	NotifySlack   = "slack"
	NotifyWebhook = "webhook"
)

// parseApproval reads and checks the "approval" section.
func parseApproval(raw json.RawMessage) (ApprovalSettings, error) {
	var a struct {
		Escalation []EscalationStep `json:"escalation"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return ApprovalSettings{}, fmt.Errorf("%w: approval: %w", ErrBadSettings, err)
	}
	for i, s := range a.Escalation {
		if err := s.check(); err != nil {
			return ApprovalSettings{}, fmt.Errorf("%w: approval.escalation[%d]: %w", ErrBadSettings, i, err)
		}
	}
	return ApprovalSettings{Escalation: a.Escalation}, nil
}

func (s EscalationStep) check() error {
	if s.After <= 0 {
		return fmt.Errorf(`"after" must be a positive duration such as "20s"`)
	}
	switch s.Notify {
	case NotifySlack:
	case NotifyWebhook:
		if s.To != "" {
			u, err := url.Parse(s.To)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return fmt.Errorf(`"to" %q is not an http(s) URL`, s.To)
			}
			if u.User != nil {
				return fmt.Errorf(`"to" carries credentials in the URL; receivers check the signature instead`)
			}
		}
	default:
		return fmt.Errorf(`"notify" %q: want "slack" or "webhook"`, s.Notify)
	}
	return nil
}

// parseAsk reads permissions.ask: rule strings, or {"rule": …,
// "timeout": "30m"} for a rule with its own deadline.
func parseAsk(raw []json.RawMessage, env Env) (rules []string, timeouts map[string]Duration, err error) {
	for i, r := range raw {
		var text string
		if err := json.Unmarshal(r, &text); err == nil {
			rules = append(rules, text)
			continue
		}
		var o struct {
			Rule    string   `json:"rule"`
			Timeout Duration `json:"timeout"`
		}
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			return nil, nil, fmt.Errorf("%w: permissions.ask[%d]: a rule string or {\"rule\": …, \"timeout\": \"30m\"}: %w", ErrBadSettings, i, err)
		}
		if _, err := parseRule(o.Rule, env); err != nil {
			return nil, nil, fmt.Errorf("%w: permissions.ask[%d]: %w", ErrBadSettings, i, err)
		}
		if o.Timeout <= 0 || time.Duration(o.Timeout) > MaxAskTimeout {
			return nil, nil, fmt.Errorf("%w: permissions.ask[%d]: timeout must be positive and at most %s", ErrBadSettings, i, MaxAskTimeout)
		}
		rules = append(rules, o.Rule)
		if timeouts == nil {
			timeouts = map[string]Duration{}
		}
		timeouts[o.Rule] = o.Timeout
	}
	return rules, timeouts, nil
}

// mergeApproval merges over into base: escalation steps of the more
// specific file replace the other's (a sequence is one plan), per-rule
// deadlines are joined, the more specific winning.
func mergeApproval(base, over ApprovalSettings) ApprovalSettings {
	out := ApprovalSettings{Escalation: base.Escalation}
	if len(over.Escalation) > 0 {
		out.Escalation = over.Escalation
	}
	for _, m := range []map[string]Duration{base.AskTimeouts, over.AskTimeouts} {
		for k, v := range m {
			if out.AskTimeouts == nil {
				out.AskTimeouts = map[string]Duration{}
			}
			out.AskTimeouts[k] = v
		}
	}
	return out
}
