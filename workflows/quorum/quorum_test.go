package quorum

import (
	"strings"
	"testing"

	"github.com/custos-dev/custos/workflows/jobapi"
)

func TestCheckVoteCountsOnlyVerifiedOthers(t *testing.T) {
	qs := []jobapi.QuorumState{{Rule: "deploy", Require: 2, From: []string{"ann", "bob", "cy"}, Approved: []string{"bob"}}}
	v := func(id string) *jobapi.VerifiedIdentity { return &jobapi.VerifiedIdentity{ID: id} }
	for _, c := range []struct {
		d    jobapi.ApprovalDecision
		want string
	}{
		{jobapi.ApprovalDecision{Decision: "deny"}, ""},
		{jobapi.ApprovalDecision{Decision: "allow", Verified: v("ann")}, ""},
		{jobapi.ApprovalDecision{Decision: "always", Verified: v("ann")}, "answer allow or deny"},
		{jobapi.ApprovalDecision{Decision: "allow", Channel: "cli"}, "a cli answer does not say"},
		{jobapi.ApprovalDecision{Decision: "allow", Verified: v("cy")}, "whom this job is for"},
		{jobapi.ApprovalDecision{Decision: "allow", Verified: v("bob")}, "bob already approved"},
		{jobapi.ApprovalDecision{Decision: "allow", Verified: v("eve")}, "eve is not among"},
	} {
		err := CheckVote(qs, c.d, []string{"cy"})
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckVote(%+v) = %v, want %q", c.d, err, c.want)
		}
	}
	Count(qs, "ann", nil)
	Count(qs, "cy", nil) // the entry has its two
	if got := strings.Join(qs[0].Approved, ","); got != "bob,ann" {
		t.Errorf("Count left %q", got)
	}
	if r := Reason(qs, "ask rule"); r != "needs approval by 2 of ann, bob, cy (approvals rule deploy); any one deny denies; ask rule" {
		t.Errorf("Reason = %q", r)
	}
	if got := OrList(nil, "nobody"); len(got) != 1 || got[0] != "nobody" {
		t.Errorf("OrList = %v", got)
	}
}
