// Package quorum holds the pure parts of the job workflow's calls that
// need N of M people: why such a call waits, whether an answer counts, and
// counting it. Plain data in, plain data out; it never imports workflows,
// which keeps the verification activity, audit and answers.
package quorum

import (
	"fmt"
	"slices"
	"strings"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Reason says why a call covered by approvals waits, after what the
// layers before had said.
func Reason(qs []jobapi.QuorumState, before string) string {
	var parts []string
	for _, q := range qs {
		parts = append(parts, fmt.Sprintf("%d of %s (approvals rule %s)", q.Require, strings.Join(q.From, ", "), q.Rule))
	}
	why := "needs approval by " + strings.Join(parts, " and ") + "; any one deny denies"
	if before != "" {
		why += "; " + before
	}
	return why
}

// CheckVote says why answer d to a call that needs the approvals qs would
// not count, or nil: owners (whom the job is for) never count, nor an
// unverified answer, nor a second approval by one person. The workflow
// refuses with the error's text.
func CheckVote(qs []jobapi.QuorumState, d jobapi.ApprovalDecision, owners []string) error {
	needed := jobapi.QuorumNeeded(qs)
	switch {
	case d.Decision == "deny":
		return nil // anyone may stop it
	case d.Decision != "allow" || d.Grant != nil:
		return fmt.Errorf("this call needs %s: answer allow or deny (no Always, Never or grant stands in for them)", needed)
	case d.Verified == nil || d.Verified.ID == "":
		return fmt.Errorf("this call needs %s, each verified by a channel (Slack); a %s answer does not say who verified gave it", needed, d.Channel)
	case slices.Contains(owners, d.Verified.ID):
		return fmt.Errorf("%s is whom this job is for: their own answer does not count towards its approvals; still needed: %s", d.Verified.ID, needed)
	}
	id := d.Verified.ID
	for _, q := range qs {
		if slices.Contains(q.Approved, id) {
			return fmt.Errorf("%s already approved this call; still needed: %s", id, needed)
		}
	}
	for _, q := range qs {
		if len(q.Approved) < q.Require && (approval.QuorumRule{From: q.From}).Qualifies(id, d.Verified.Groups) {
			return nil
		}
	}
	return fmt.Errorf("%s is not among those who may approve this call; still needed: %s", id, needed)
}

// Count counts id's approval (in groups) towards every entry of qs it
// qualifies for that still needs one, in place.
func Count(qs []jobapi.QuorumState, id string, groups []string) {
	for i := range qs {
		q := &qs[i]
		if len(q.Approved) < q.Require && (approval.QuorumRule{From: q.From}).Qualifies(id, groups) {
			q.Approved = append(q.Approved, id)
		}
	}
}

// OrList is list, or a one-word list when it is empty.
func OrList(list []string, none string) []string {
	if len(list) == 0 {
		return []string{none}
	}
	return list
}
