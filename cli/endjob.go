package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/workflows/jobapi"
)

// endAttempts bounds how often the end Update is sent again after the
// server dropped its answer.
const endAttempts = 5

// sendEnd sends the end Update and comes back with a definite answer: the
// job's last state, or a notApplied error that says why it did not end it
// (the job's refusal, or that it had ended already). The Update goes under
// one ID however often it is sent, so it counts once. The server drops an
// Update's answer when the workflow task that carried it fails ("unexpected
// workflow task failure", WorkflowNotReady): then it is sent again.
func sendEnd(ctx context.Context, c client.Client, id string, e jobapi.End) (jobapi.EndResult, error) {
	updateID := "end-" + strings.TrimPrefix(newMessageID(), "msg-")
	for attempt := 1; ; attempt++ {
		var res jobapi.EndResult
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateID: updateID,
			UpdateName: jobapi.EndUpdate, Args: []any{e}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, &res)
		}
		if err == nil {
			return res, nil
		}
		if msg, ok := jobRefusal(err); ok {
			return res, notApplied{msg}
		}
		var notReady *serviceerror.WorkflowNotReady
		if errors.As(err, &notReady) && attempt < endAttempts && ctx.Err() == nil {
			select {
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			case <-ctx.Done():
			}
			continue
		}
		if why := jobClosed(ctx, c, id); why != "" {
			return res, notApplied{why}
		}
		return res, err
	}
}

// jobClosed says, when job id's last run has closed, how ("" while it
// runs or when it cannot be told).
func jobClosed(ctx context.Context, c client.Client, id string) string {
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return ""
	}
	st := d.GetWorkflowExecutionInfo().GetStatus()
	switch st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED:
		return ""
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return "the job has already ended"
	}
	return fmt.Sprintf("the job has already ended (%s)", st)
}
