package model

import (
	"context"

	"github.com/custos-dev/custos/activities/api"
)

// streamAdKey carries where this model call's text is served.
type streamAdKey struct{}

// advertise grants followers job's text from m.Serve while the call runs
// and records where in ctx, for the heartbeat (modelProgress). revoke ends
// the grant; call it after the answer's last chunk is published.
func (m *Model) advertise(ctx context.Context, job string) (context.Context, func()) {
	if m.Serve == nil || m.Serve.URL == "" {
		return ctx, func() {}
	}
	token, revoke := m.Serve.Grant(job)
	return context.WithValue(ctx, streamAdKey{}, api.ModelProgress{Stream: m.Serve.URL, Token: token}), revoke
}

// modelProgress is the heartbeat's details: the progress text, with the
// stream's address and token when the call's text is served.
func modelProgress(ctx context.Context, progress string) any {
	ad, ok := ctx.Value(streamAdKey{}).(api.ModelProgress)
	if !ok {
		return progress
	}
	ad.Progress = progress
	return ad
}
