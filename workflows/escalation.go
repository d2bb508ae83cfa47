package workflows

import (
	"time"

	"github.com/custos-dev/custos/approval"
)

// askTimeout is how long a call waits for a person: the deadline of the
// ask rule that asks (permissions.ask {"rule", "timeout"}), else the job's.
// Either way, when it passes the call is denied.
func (j *job) askTimeout(found approval.Findings) time.Duration {
	if r := found.Rules; r.Decision == approval.Ask && r.Rule != "" {
		if d, ok := j.st.Settings.Approval.AskTimeouts[r.Rule]; ok && d > 0 {
			return time.Duration(d)
		}
	}
	return j.in.ApprovalTimeout
}
