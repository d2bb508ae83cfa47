package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enums "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/custos-dev/custos/workflows/jobapi"
)

// execution is a run as visibility lists it, with listing l in its memo
// (nil: none).
func execution(t *testing.T, id string, status enums.WorkflowExecutionStatus, start, end time.Time, l *jobapi.Listing) *workflowpb.WorkflowExecutionInfo {
	t.Helper()
	e := &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: id + "-" + start.Format("150405")},
		Status: status, StartTime: timestamppb.New(start)}
	if !end.IsZero() {
		e.CloseTime = timestamppb.New(end)
	}
	if l != nil {
		p, err := converter.GetDefaultDataConverter().ToPayload(*l)
		require.NoError(t, err)
		e.Memo = &commonpb.Memo{Fields: map[string]*commonpb.Payload{jobapi.ListingMemo: p}}
	}
	return e
}

// A running job is listed as its memo says; a closed one as ended, how it
// ended from its memo when it completed, else from visibility; a job of
// several runs once, with its latest run and its first start.
func TestJobRows(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	waiting := &jobapi.Listing{Status: jobapi.ListWaitingPerson, Phase: "waiting", Task: "ask", Workspace: "/w", Turn: 1, Since: t0.Add(time.Minute),
		Waiting: []jobapi.ListedCall{{Call: "c1", Tool: "Write", Summary: "Write a.txt"}}}
	r := jobRow(execution(t, "a", enums.WORKFLOW_EXECUTION_STATUS_RUNNING, t0, time.Time{}, waiting))
	assert.Equal(t, jobapi.ListWaitingPerson, r.Status)
	assert.Equal(t, "/w", r.Workspace)
	assert.Equal(t, t0.Add(time.Minute), r.LastActivity)
	assert.Equal(t, waiting.Waiting, r.Waiting)
	assert.Nil(t, r.Ended)

	done := &jobapi.Listing{Status: jobapi.ListEnded, Why: "max turns", Since: t0}
	r = jobRow(execution(t, "b", enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, t0, t0.Add(time.Hour), done))
	assert.Equal(t, jobapi.ListEnded, r.Status)
	assert.Equal(t, "max turns", r.Why)
	require.NotNil(t, r.Ended)
	assert.Equal(t, t0.Add(time.Hour), *r.Ended)
	assert.Equal(t, t0.Add(time.Hour), r.LastActivity)

	// Terminated while it waited: visibility says how it ended, and nothing waits.
	r = jobRow(execution(t, "c", enums.WORKFLOW_EXECUTION_STATUS_TERMINATED, t0, t0.Add(time.Hour), waiting))
	assert.Equal(t, jobapi.ListEnded, r.Status)
	assert.Equal(t, "terminated", r.Why)
	assert.Empty(t, r.Waiting)

	r = jobRow(execution(t, "old", enums.WORKFLOW_EXECUTION_STATUS_RUNNING, t0, time.Time{}, nil))
	assert.Equal(t, jobapi.ListWorking, r.Status)
	assert.Contains(t, r.Phase, "before job listings")

	byID := map[string]*JobRow{}
	first := execution(t, "d", enums.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, t0, t0.Add(time.Hour), waiting)
	second := execution(t, "d", enums.WORKFLOW_EXECUTION_STATUS_RUNNING, t0.Add(time.Hour), time.Time{},
		&jobapi.Listing{Status: jobapi.ListWaitingMessage, Since: t0.Add(2 * time.Hour)})
	mergeRun(byID, jobRow(second))
	mergeRun(byID, jobRow(first))
	require.Len(t, byID, 1)
	assert.Equal(t, jobapi.ListWaitingMessage, byID["d"].Status, "the latest run is the job's status")
	assert.Equal(t, t0, byID["d"].Started, "the job started with its first run")
}
