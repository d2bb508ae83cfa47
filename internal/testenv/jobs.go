package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// StartJob starts a custos job with ID id on c.
func StartJob(t testing.TB, c client.Client, id string, in jobapi.JobInput) client.WorkflowRun {
	t.Helper()
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: api.TaskQueue},
		jobapi.WorkflowName, in)
	require.NoError(t, err)
	return run
}

// queryAttempt bounds one query of a job. A query is answered by a worker
// (after the workflow task in flight, if any; through the sticky queue of
// the worker that ran the last one until the server gives up on it): one
// that hangs must cost one attempt of a wait, not the wait. The SDK gives
// the RPC half of a context's time, keeping the rest for a retry of a call
// that got lost. A variable, for this package's tests.
var queryAttempt = 10 * time.Second

// slowQuery is how long a status query takes before WaitPending says so.
const slowQuery = 2 * time.Second

// Status is the job's status query, bounded by queryAttempt.
func Status(c client.Client, id string) (jobapi.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), queryAttempt)
	defer cancel()
	return StatusContext(ctx, c, id)
}

// StatusContext is the job's status query, bounded by ctx.
func StatusContext(ctx context.Context, c client.Client, id string) (jobapi.Status, error) {
	var st jobapi.Status
	v, err := c.QueryWorkflow(ctx, id, "", jobapi.StatusQuery)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

// Pending reports whether callID of job id waits for a person (a failed
// query counts as not yet).
func Pending(c client.Client, id, callID string) bool {
	st, err := Status(c, id)
	return err == nil && pendingIn(st, callID)
}

func pendingIn(st jobapi.Status, callID string) bool {
	for _, p := range st.Pending {
		if p.CallID == callID {
			return true
		}
	}
	return false
}

// WaitPending polls the status query until callID of job id waits for a
// person, for at most within (each query bounded by queryAttempt, so one
// that hangs is asked again). If it never does, the test fails with what the
// last query said, after LogJob has put the job's history, pending work and
// task queues in the test log.
func WaitPending(t testing.TB, c client.Client, id, callID string, within time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	var last string
	queries, failed := 0, 0
	for {
		asked := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), min(queryAttempt, max(time.Until(deadline), 100*time.Millisecond)))
		st, err := StatusContext(ctx, c, id)
		cancel()
		queries++
		took := time.Since(asked).Round(time.Millisecond)
		if err == nil && pendingIn(st, callID) {
			return
		}
		if err != nil || took > slowQuery {
			// Shown with -v or when the test fails: a server or worker
			// that answers slowly is the first thing to know about.
			t.Logf("waiting for %s of %s: status query %d took %s: %v", callID, id, queries, took, err)
		}
		if err != nil {
			failed++
			last = fmt.Sprintf("error %s into the wait: %v", time.Since(start).Round(time.Millisecond), err)
		} else {
			last = describeStatus(st)
		}
		if !time.Now().Before(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	LogJob(t, c, id)
	t.Fatalf("call %s of %s never became pending within %s (%d status queries, %d failed); the last: %s",
		callID, id, within, queries, failed, last)
}

// describeStatus is what a status says about a job's progress, on one line.
func describeStatus(st jobapi.Status) string {
	ids := make([]string, len(st.Pending))
	for i, p := range st.Pending {
		ids[i] = p.CallID
	}
	return fmt.Sprintf("state %q, turn %d, pending %v", st.State, st.Turn, ids)
}

// Audit is the job's audit query: every decision and event, in order.
func Audit(t testing.TB, c client.Client, id string) []approval.AuditRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), queryAttempt)
	defer cancel()
	v, err := c.QueryWorkflow(ctx, id, "", jobapi.AuditQuery)
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
func Result(c client.Client, id string, within time.Duration) (jobapi.JobResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var res jobapi.JobResult
	err := c.GetWorkflow(ctx, id, "").Get(ctx, &res)
	return res, err
}

// Finished waits at most within for job id to end, fails the test unless it
// ended well, and returns its result.
func Finished(t testing.TB, c client.Client, id string, within time.Duration, msgAndArgs ...any) jobapi.JobResult {
	t.Helper()
	res, err := Result(c, id, within)
	if err != nil {
		LogJob(t, c, id)
	}
	require.NoError(t, err, msgAndArgs...)
	return res
}
