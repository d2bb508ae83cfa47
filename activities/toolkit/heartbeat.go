package toolkit

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
)

// HeartbeatEvery records a heartbeat at once and then every d until stop is
// called, with details() as progress, so a worker that dies while a call waits (on a model, on a hook) is
// noticed within the heartbeat timeout. stop returns once the heartbeating
// goroutine has ended. Outside an activity (plain unit tests) it does nothing.
func HeartbeatEvery(ctx context.Context, d time.Duration, details func() any) (stop func()) {
	return heartbeatLoop(ctx, d, details, true)
}

// HeartbeatAfter is HeartbeatEvery without the first heartbeat at once:
// for a call that mostly ends within d (an MCP call), which then pays no
// heartbeat round trip to the server at all (the first one is a
// synchronous request). A cancellation still reaches it at the first tick,
// and a worker that dies before it is noticed within the heartbeat
// timeout, counted from the start.
func HeartbeatAfter(ctx context.Context, d time.Duration, details func() any) (stop func()) {
	return heartbeatLoop(ctx, d, details, false)
}

func heartbeatLoop(ctx context.Context, d time.Duration, details func() any, now bool) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	if now {
		activity.RecordHeartbeat(ctx, details())
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, details())
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
