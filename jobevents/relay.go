package jobevents

import (
	"context"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/stream"
)

// relayPoll is how often Relay looks for the job's running model call.
const relayPoll = 200 * time.Millisecond

// Relay is a hub fed, until ctx ends, with job id's text from the worker
// that runs its model call, wherever that is: the call's heartbeat
// details (api.ModelProgress, read from the pending activity) name the
// worker's stream and a token of that call alone. A worker that serves no
// stream leaves the hub empty; the journal still gives each answer.
func Relay(ctx context.Context, c client.Client, id string) *stream.Hub {
	hub := stream.NewHub(stream.Limits{})
	go relay(ctx, c, id, stream.NewRelayer(hub, id))
	return hub
}

func relay(ctx context.Context, c client.Client, id string, r *stream.Relayer) {
	hc := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 5 * time.Second}}
	defer hc.CloseIdleConnections()
	used := map[string]bool{} // tokens read already: an answer is read once
	wait := time.NewTimer(0)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wait.C:
		}
		next := relayPoll
		ad, err := streamOf(ctx, c, id)
		if err != nil {
			next = 2 * time.Second // no such job (yet), or no server: slower
		}
		if ad.Token != "" && !used[ad.Token] {
			if len(used) > 1024 {
				clear(used)
			}
			used[ad.Token] = true
			_ = stream.Fetch(ctx, hc, ad.Stream, id, ad.Token, r.Put)
			r.Cut()
			next = 0
		}
		wait.Reset(next)
	}
}

// streamOf is where the job's running model call serves its text (zero
// when no call runs, or its worker serves none).
func streamOf(ctx context.Context, c client.Client, id string) (api.ModelProgress, error) {
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return api.ModelProgress{}, err
	}
	dc := converter.GetDefaultDataConverter()
	for _, pa := range d.GetPendingActivities() {
		if pa.GetActivityType().GetName() != api.ModelActivity || pa.GetHeartbeatDetails() == nil {
			continue
		}
		var p api.ModelProgress
		if dc.FromPayloads(pa.GetHeartbeatDetails(), &p) == nil && p.Stream != "" && p.Token != "" {
			return p, nil
		}
	}
	return api.ModelProgress{}, nil
}
