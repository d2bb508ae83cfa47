package frontendtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// The SDK's client sends an Update over the wire and reads back the
// handler's result, its application error, or the RPC's NotFound; a
// query's result comes back decoded.
func TestUpdatesAndQueriesOverTheWire(t *testing.T) {
	f := Start(t, func(c Call) (any, error) {
		switch c.Workflow {
		case "gone":
			return nil, serviceerror.NewNotFound("workflow execution already completed")
		case "refuses":
			return nil, temporal.NewNonRetryableApplicationError("refused: no", "Refused", nil)
		}
		return map[string]any{"got": c.Arg}, nil
	}, func(c Call) (any, error) { return map[string]string{"state": "waiting for " + c.Name}, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send := func(job string) (map[string]any, error) {
		var res map[string]any
		h, err := f.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: job, UpdateName: "message",
			Args: []any{map[string]string{"text": "hi"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, &res)
		}
		return res, err
	}
	res, err := send("job-1")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"got": map[string]any{"text": "hi"}}, res)
	_, err = send("refuses")
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%v", err)
	assert.Equal(t, "refused: no", ae.Message())
	_, err = send("gone")
	var nf *serviceerror.NotFound
	require.True(t, errors.As(err, &nf), "%v", err)

	up := f.Updates()
	require.Len(t, up, 3)
	assert.Equal(t, "job-1", up[0].Workflow)
	assert.Equal(t, "message", up[0].Name)
	assert.JSONEq(t, `{"text":"hi"}`, string(up[0].Arg))
	assert.NotEmpty(t, up[0].UpdateID)

	v, err := f.Client.QueryWorkflow(ctx, "job-1", "", "status")
	require.NoError(t, err)
	var st map[string]string
	require.NoError(t, v.Get(&st))
	assert.Equal(t, "waiting for status", st["state"])
}
