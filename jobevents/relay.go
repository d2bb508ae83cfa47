package jobevents

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/stream"
)

// Relay is a hub fed with job id's text from the worker that runs its
// model call (to be written).
func Relay(ctx context.Context, c client.Client, id string) *stream.Hub { return nil }
