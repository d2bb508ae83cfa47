package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"
)

// registerRetry sets the retry Update: it cuts a parked model call's
// backoff. Its validator refuses it, leaving no trace, when the job is not
// waiting for the model endpoint.
func (j *job) registerRetry(ctx workflow.Context) error {
	j.retryNow = workflow.NewBufferedChannel(ctx, 1)
	err := workflow.SetUpdateHandlerWithOptions(ctx, RetryUpdate,
		func(ctx workflow.Context, r RetryRequest) (RetryResult, error) {
			w := j.st.ModelWait
			j.retryNow.SendAsync(r.By)
			return RetryResult{Kind: w.Kind, Error: w.Error, Attempts: w.Attempts}, nil
		},
		workflow.UpdateHandlerOptions{
			Validator: func(RetryRequest) error {
				if j.st == nil || j.st.ModelWait == nil {
					return notApplied("the job is not waiting for the model endpoint (it is %s); nothing to retry", j.phase)
				}
				return nil
			},
			Description: `Call the model endpoint again now, when the job waits for it (a refused key, an unknown model, no quota, answers that are not chat completions): {"by": "you"}.`,
		})
	if err != nil {
		return fmt.Errorf("register %s update: %w", RetryUpdate, err)
	}
	return nil
}
