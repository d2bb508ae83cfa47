package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testbin"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/notify/slack"
	"github.com/custos-dev/custos/notify/slack/slacktest"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// BenchmarkSlackClickToToolStart measures, in one job on the embedded
// server, the time from a signed Slack click leaving for the bot's endpoint
// to the approved Write's ActivityTaskStarted event, against the time from
// running `temporal workflow signal` to the same event, over 100 approvals
// each (interleaved, so both see the same server). Run with
//
//	go test ./e2e/ -run '^$' -bench BenchmarkSlackClickToToolStart -benchtime 1x
//
// The figures are reported as metrics (milliseconds).
func BenchmarkSlackClickToToolStart(b *testing.B) {
	const perPath = 100
	cli, err := testbin.TemporalCLI()
	require.NoError(b, err)
	srv := testenv.StartServer(b, devserver.Options{UIPort: -1})
	c := testenv.Dial(b, srv)

	n := 2 * perPath
	rig := startSlackRig(b, srv, c, writesThenDone(n))
	ws := testenv.Workspace(b)

	b.ResetTimer()
	for range b.N {
		id := fmt.Sprintf("bench-slack-%d", time.Now().UnixNano())
		run := testenv.StartJob(b, c, id, jobapi.JobInput{Once: true, Task: "bench", Workspace: ws, ApprovalTimeout: 10 * time.Minute, MaxTurns: n + 5})
		firstRun := run.GetRunID() // Get follows continue-as-new and moves on
		sent := map[string]time.Time{}
		viaSlack := map[string]bool{}
		for i := range n {
			call := waitingCall(b, rig, id, benchCallID(i))
			m := rig.message(b, call) // its message is posted
			if i%2 == 0 {
				viaSlack[call] = true
				respURL := rig.slack.ResponseURL()
				payload, err := slacktest.Click(m, slack.ActionAllow, alice, respURL)
				require.NoError(b, err)
				sent[call] = time.Now()
				res, err := slacktest.Post(rig.endpoint, slackSecret, time.Now(), slacktest.Interaction(payload))
				require.NoError(b, err)
				require.Equal(b, http.StatusOK, res.StatusCode)
			} else {
				sent[call] = time.Now()
				args := append([]string{"workflow", "signal", "--workflow-id", id, "--name", jobapi.ApprovalSignal,
					"--input", fmt.Sprintf(`{"callId":%q,"decision":"allow","by":"bench"}`, call), "--namespace", "default"},
					srv.TLSFiles().TemporalCLIFlags(srv.FrontendAddr())...)
				out, err := exec.Command(cli, args...).CombinedOutput()
				require.NoError(b, err, "%s", out)
			}
		}
		gctx, gcancel := context.WithTimeout(context.Background(), 5*time.Minute)
		require.NoError(b, run.Get(gctx, nil))
		gcancel()
		b.StopTimer()
		started := toolStarts(b, c, id, firstRun)
		var slackLat, signalLat []time.Duration
		for call, t0 := range sent {
			at, ok := started[call]
			require.True(b, ok, "no ActivityTaskStarted for %s", call)
			if viaSlack[call] {
				slackLat = append(slackLat, at.Sub(t0))
			} else {
				signalLat = append(signalLat, at.Sub(t0))
			}
		}
		report(b, "slack", slackLat)
		report(b, "signal", signalLat)
		b.StartTimer()
	}
}

// toolStarts maps each Write call to its ActivityTaskStarted event time,
// following the job through continue-as-new.
func toolStarts(b *testing.B, c client.Client, id, runID string) map[string]time.Time {
	out := map[string]time.Time{}
	for runID != "" {
		runID = runToolStarts(b, c, id, runID, out)
	}
	return out
}

// runToolStarts adds one run's tool starts to out and returns the next run's ID.
func runToolStarts(b *testing.B, c client.Client, id, runID string, out map[string]time.Time) string {
	next := ""
	scheduled := map[int64]string{}
	iter := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(b, err)
		if a := e.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
			next = a.GetNewExecutionRunId()
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == api.WriteActivity {
			var req api.ToolRequest
			require.NoError(b, json.Unmarshal(a.GetInput().GetPayloads()[0].GetData(), &req))
			scheduled[e.GetEventId()] = req.CallID
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
			if call, ok := scheduled[a.GetScheduledEventId()]; ok {
				out[call] = e.GetEventTime().AsTime()
			}
		}
	}
	return next
}

func report(b *testing.B, name string, d []time.Duration) {
	slices.Sort(d)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	med := d[len(d)/2]
	p99 := d[min(len(d)-1, (len(d)*99+99)/100-1)]
	b.ReportMetric(ms(med), name+"-median-ms")
	b.ReportMetric(ms(p99), name+"-p99-ms")
	b.Logf("%s: n=%d median %.1f ms, p99 %.1f ms, min %.1f ms, max %.1f ms", name, len(d), ms(med), ms(p99), ms(d[0]), ms(d[len(d)-1]))
}
