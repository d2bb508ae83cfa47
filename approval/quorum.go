package approval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/custos-dev/custos/approval/shell"
)

// QuorumRule is one entry of the settings' "approvals": a call its rule
// matches needs Require distinct people of From to allow it (N of M). Any
// one deny denies, the job's owner does not count, the deadline still
// denies, and only answers whose identity a channel verified count.
//
// A quorum is stricter than everything but a deny: a call it covers goes
// to a person even when an allow rule, a mode or a hook would have let it
// run, and no Always answer or grant stands in for it.
type QuorumRule struct {
	Rule    string   `json:"rule"`
	Require int      `json:"require"`
	From    []string `json:"from"`
}

// Qualifies reports whether a person (id, in the groups the channel found
// them in) is one of From.
func (q QuorumRule) Qualifies(id string, groups []string) bool {
	for _, f := range q.From {
		if f == id || slices.Contains(groups, f) {
			return true
		}
	}
	return false
}

// isGroupID says whether an approver entry names a group (a Slack user
// group, S…) rather than one person.
func isGroupID(id string) bool { return strings.HasPrefix(id, "S") }

// parseApprovals reads "approvals" strictly: a typo must not leave a
// critical command with a single approver.
func parseApprovals(raw json.RawMessage, workspace string) ([]QuorumRule, error) {
	var qs []QuorumRule
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&qs); err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	env := Env{Workspace: workspace, Home: "/nonexistent-home"}
	for i, q := range qs {
		where := fmt.Sprintf("approvals[%d]", i)
		if _, err := parseRule(q.Rule, env); err != nil {
			return nil, fmt.Errorf("%s.rule: %w", where, err)
		}
		if len(q.From) == 0 {
			return nil, fmt.Errorf("%s.from: name the people (user IDs) or groups who may approve", where)
		}
		groups := false
		for j, id := range q.From {
			if id == "" || strings.TrimSpace(id) != id || strings.ContainsAny(id, " \t\n\x00") {
				return nil, fmt.Errorf("%s.from[%d]: %q is not an identity", where, j, id)
			}
			groups = groups || isGroupID(id)
		}
		if q.Require < 1 {
			return nil, fmt.Errorf("%s.require: %d; at least 1", where, q.Require)
		}
		if !groups && q.Require > len(q.From) {
			return nil, fmt.Errorf("%s.require: %d approvals from %d people can never be met", where, q.Require, len(q.From))
		}
	}
	return qs, nil
}

// parseIdentities reads "identities": the user's own identities on the
// channels (e.g. their Slack user ID), so that a job they started never
// counts their own answer towards a quorum.
func parseIdentities(raw json.RawMessage) ([]string, error) {
	var ids []string
	if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, fmt.Errorf("identities: %w", err)
	}
	for i, id := range ids {
		if strings.TrimSpace(id) == "" || strings.ContainsAny(id, " \t\n\x00") {
			return nil, fmt.Errorf("identities[%d]: %q is not an identity", i, id)
		}
	}
	return ids, nil
}

// mergeQuorums concatenates the lists, dropping repeats: every entry is a
// requirement of its own, so a more specific file can only add to them.
func mergeQuorums(a, b []QuorumRule) []QuorumRule {
	var out []QuorumRule
	for _, q := range append(slices.Clone(a), b...) {
		if !slices.ContainsFunc(out, func(o QuorumRule) bool {
			return o.Rule == q.Rule && o.Require == q.Require && slices.Equal(o.From, q.From)
		}) {
			out = append(out, q)
		}
	}
	return out
}

// quorumRule is a compiled QuorumRule: its rule alone in a set, matched
// the way a deny rule is.
type quorumRule struct {
	r   *rule
	set ruleSet
	q   QuorumRule
}

func compileQuorum(q QuorumRule, env Env) (quorumRule, error) {
	r, err := parseRule(q.Rule, env)
	if err != nil {
		return quorumRule{}, err
	}
	e := quorumRule{r: r, q: q}
	e.set.add(r)
	return e, nil
}

// Quorum returns the approvals entries that cover c, in settings order; a
// call needs every one of them met. They match as deny and ask rules do
// (any simple command of a Bash call, wrappers and global options seen
// through); a Bash command custos cannot fully analyse could hide any
// command, so every Bash entry covers it: fail closed.
func (p *Policy) Quorum(c Call) []QuorumRule {
	if len(p.quorum) == 0 {
		return nil
	}
	in, err := parseInput(c, p.env)
	if err != nil {
		return nil // a malformed input is denied before it could ask
	}
	var out []QuorumRule
	if c.Tool == "Bash" {
		a := shell.Analyze(in.command, p.env.shell())
		text := strings.Join(strings.Fields(in.command), " ")
		for _, e := range p.quorum {
			if e.r.tool != "Bash" {
				continue
			}
			if len(a.Undecidable) > 0 || e.set.matchBashAny(a, text) != nil {
				out = append(out, e.q)
			}
		}
		return out
	}
	for _, e := range p.quorum {
		if e.r.tool != "Bash" && e.r.appliesTo(c.Tool) && e.r.matchTool(in, false) {
			out = append(out, e.q)
		}
	}
	return out
}
