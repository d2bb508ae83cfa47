package model

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
)

// MetricModelErrors counts failed model calls by kind: refused (the
// operator must fix the key, model or quota), garbage (the answer is not a
// chat completion), request (the endpoint can never accept it),
// context_length, transient (429, 5xx, network).
const MetricModelErrors = "custos_model_errors"

// observeModelError counts err and returns it.
func observeModelError(ctx context.Context, err error) error {
	if err == nil || !activity.IsActivity(ctx) {
		return err
	}
	kind := "transient"
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		switch ae.Type() {
		case api.ModelRefusedErrorType:
			kind = "refused"
		case api.ModelGarbageErrorType:
			kind = "garbage"
		case api.ContextLengthErrorType:
			kind = "context_length"
		case api.ModelRequestErrorType:
			kind = "request"
		}
	}
	activity.GetMetricsHandler(ctx).WithTags(map[string]string{"kind": kind}).Counter(MetricModelErrors).Inc(1)
	return err
}
