package slack

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/workflows/jobapi"
)

// What the person who clicked reads.
func TestReplies(t *testing.T) {
	for _, tc := range []struct {
		res  jobapi.DecideResult
		want string
	}{
		{jobapi.DecideResult{Tool: "Write", Summary: "Write notes.md", Decision: "allow", Answer: "allow"}, "allowed Write notes.md"},
		{jobapi.DecideResult{Tool: "Bash", Summary: "Bash rm -rf build", Decision: "deny", Answer: "deny"}, "denied Bash rm -rf build"},
		{jobapi.DecideResult{Tool: "Bash", Summary: "Bash go test ./...", Decision: "allow", Answer: "always", Rule: "Bash(go test *)"},
			"allowed (always) Bash go test ./...; rule learned: Bash(go test *)"},
		{jobapi.DecideResult{Tool: "Read", Decision: "deny", Answer: "never"}, "denied (never) Read"},
		{jobapi.DecideResult{Tool: "Bash", Summary: "Bash git push", Answer: "vote", Needed: "1 more from U0A, S0OPS"},
			"approval counted for Bash git push; still needed: 1 more from U0A, S0OPS. The call is still waiting."},
	} {
		assert.Equal(t, tc.want, decidedText(tc.res))
	}

	for _, tc := range []struct {
		name    string
		err     error
		refused string
		want    string
	}{
		{"the job said no", temporal.NewNonRetryableApplicationError("not applied: already denied by the 1m0s timer at 14:03:07 UTC", "NotApplied", nil), "",
			"not applied: already denied by the 1m0s timer at 14:03:07 UTC"},
		{"wrapped the way the SDK returns it", fmt.Errorf("update failed: %w", temporal.NewNonRetryableApplicationError("not applied: no call \"x\" is waiting", "NotApplied", nil)), "",
			`not applied: no call "x" is waiting`},
		{"not an approver", temporal.NewNonRetryableApplicationError("refused: U1 via slack may not answer c: not in SLACK_APPROVERS", "Refused", nil), NotApprover,
			"refused: you are not in SLACK_APPROVERS: only approvers may allow, always or never (anyone may deny). The call is still waiting."},
		{"group lookup failed", temporal.NewNonRetryableApplicationError("refused: …", "Refused", nil), "could not check SLACK_APPROVERS: boom",
			"refused: could not check SLACK_APPROVERS: boom. The call is still waiting."},
		{"the job could not verify the signature", temporal.NewNonRetryableApplicationError("refused: U1 via slack: could not verify the identity: no key", "Refused", nil), "",
			"refused: U1 via slack: could not verify the identity: no key. The call is still waiting."},
		{"job gone", serviceerror.NewNotFound("workflow execution already completed"), "", "not applied: job j is not running (it has ended, or never existed)"},
		{"Temporal unreachable", errors.New("connection refused"), "", "not applied: could not reach the job: connection refused"},
	} {
		assert.Equal(t, tc.want, answerError(tc.err, "j", tc.refused), tc.name)
	}
}
