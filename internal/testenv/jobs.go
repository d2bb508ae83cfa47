package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows"
)

// StartJob starts a custos job with ID id on c.
func StartJob(t testing.TB, c client.Client, id string, in workflows.JobInput) client.WorkflowRun {
	t.Helper()
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: api.TaskQueue},
		workflows.WorkflowName, in)
	require.NoError(t, err)
	return run
}

// Status is the job's status query.
func Status(c client.Client, id string) (workflows.Status, error) {
	var st workflows.Status
	v, err := c.QueryWorkflow(context.Background(), id, "", workflows.StatusQuery)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

// Pending reports whether callID of job id waits for a person (a failed
// query counts as not yet).
func Pending(c client.Client, id, callID string) bool {
	st, err := Status(c, id)
	if err != nil {
		return false
	}
	for _, p := range st.Pending {
		if p.CallID == callID {
			return true
		}
	}
	return false
}

// WaitPending polls the status query until callID of job id waits for a
// person, for at most within.
func WaitPending(t testing.TB, c client.Client, id, callID string, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool { return Pending(c, id, callID) },
		within, 100*time.Millisecond, "call %s of %s never became pending", callID, id)
}

// Audit is the job's audit query: every decision and event, in order.
func Audit(t testing.TB, c client.Client, id string) []approval.AuditRecord {
	t.Helper()
	v, err := c.QueryWorkflow(context.Background(), id, "", workflows.AuditQuery)
	require.NoError(t, err)
	var recs []approval.AuditRecord
	require.NoError(t, v.Get(&recs))
	return recs
}

// Decisions maps call ID to its decision record (signals and other events
// left out).
func Decisions(recs []approval.AuditRecord) map[string]approval.AuditRecord {
	out := map[string]approval.AuditRecord{}
	for _, r := range recs {
		if r.Event == "" {
			out[r.CallID] = r
		}
	}
	return out
}

// Result waits at most within for job id to end and returns its result.
func Result(c client.Client, id string, within time.Duration) (workflows.JobResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var res workflows.JobResult
	err := c.GetWorkflow(ctx, id, "").Get(ctx, &res)
	return res, err
}

// Finished waits at most within for job id to end, fails the test unless it
// ended well, and returns its result.
func Finished(t testing.TB, c client.Client, id string, within time.Duration, msgAndArgs ...any) workflows.JobResult {
	t.Helper()
	res, err := Result(c, id, within)
	require.NoError(t, err, msgAndArgs...)
	return res
}
