package details

import (
	"strings"
	"testing"
	"time"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Closed says who decided a call and when, or what denied it when nobody
// did: the call's own deadline before the job's.
func TestClosedSaysHowACallLeftLayer5(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		r    jobapi.DecideResult
		want string
	}{
		{jobapi.DecideResult{Answer: AnswerTimeout, At: at}, "denied by the 1m0s timer at 03:04:05 UTC (nobody answered in time)"},
		{jobapi.DecideResult{Answer: AnswerTimeout, At: at, Timeout: 5 * time.Second}, "denied by the 5s timer at 03:04:05 UTC (nobody answered in time)"},
		{jobapi.DecideResult{Answer: AnswerCanceled, At: at}, "denied at 03:04:05 UTC: the job was canceled"},
		{jobapi.DecideResult{Answer: AnswerInterrupted, At: at}, "denied at 03:04:05 UTC: interrupted"},
		{jobapi.DecideResult{Answer: "always", Decision: approval.Allow, By: "ann", Channel: "slack", At: at}, "allowed (always) by ann via slack at 03:04:05 UTC"},
		{jobapi.DecideResult{Answer: "deny", Decision: approval.Deny, By: "bo", Channel: "temporal", At: at}, "denied by bo via temporal at 03:04:05 UTC"},
	} {
		if got := Closed(c.r, time.Minute); got != c.want {
			t.Errorf("Closed(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}

// A call waiting for several verified people can only be denied from the
// Web UI; another gets the allow payload, and the grant hint only when
// grants are on.
func TestPendingSaysHowToAnswer(t *testing.T) {
	ask := jobapi.PendingAsk{CallID: "c1", Tool: "Bash", Summary: "npm test", Rule: "Bash(npm test:*)", Reason: "asks"}
	var b strings.Builder
	Pending(&b, []jobapi.PendingAsk{ask}, true)
	if s := b.String(); !strings.Contains(s, `"decision":"allow"`) || !strings.Contains(s, `"grant": {"for": "30m"}`) {
		t.Errorf("an ordinary call's details lack its allow payload or the grant hint:\n%s", s)
	}
	b.Reset()
	Pending(&b, []jobapi.PendingAsk{ask}, false)
	if strings.Contains(b.String(), "grant") {
		t.Errorf("grants are off, yet the details offer one:\n%s", b.String())
	}
	ask.Quorum = []jobapi.QuorumState{{Rule: "Bash(npm test:*)", Require: 2}}
	b.Reset()
	Pending(&b, []jobapi.PendingAsk{ask}, true)
	if s := b.String(); strings.Contains(s, `"decision":"allow"`) || !strings.Contains(s, `"decision":"deny"`) {
		t.Errorf("a call needing approvals is offered an allow from the Web UI:\n%s", s)
	}
}
