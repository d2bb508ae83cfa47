package testenv

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/custos-dev/custos/workflows/jobapi"
)

// diagnoseTimeout bounds all of LogJob: it runs when a test is already
// failing, often because the server or a worker is stuck.
const diagnoseTimeout = 30 * time.Second

// LogJob puts into the test log what the server knows of job id, for a test
// that is about to fail waiting for it: the execution's state, its pending
// workflow task and activities, every history event (type, time since the
// first, what it names), the pollers of the task queues the job waits on,
// and the job's own events query. Whatever cannot be had is logged as such.
func LogJob(t testing.TB, c client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), diagnoseTimeout)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "job %s, as the server has it at %s:\n", id, time.Now().UTC().Format("15:04:05.000"))
	type queue struct {
		name string
		typ  enumspb.TaskQueueType
	}
	var queues []queue

	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		fmt.Fprintf(&b, "  describe: %v\n", err)
	} else {
		info := desc.GetWorkflowExecutionInfo()
		fmt.Fprintf(&b, "  run %s: %s, %d events, task queue %s, started %s\n", info.GetExecution().GetRunId(),
			info.GetStatus(), info.GetHistoryLength(), info.GetTaskQueue(), stamp(info.GetStartTime()))
		queues = append(queues, queue{info.GetTaskQueue(), enumspb.TASK_QUEUE_TYPE_WORKFLOW})
		if wt := desc.GetPendingWorkflowTask(); wt != nil {
			fmt.Fprintf(&b, "  pending workflow task: %s, attempt %d, scheduled %s (first %s), started %s\n",
				wt.GetState(), wt.GetAttempt(), stamp(wt.GetScheduledTime()), stamp(wt.GetOriginalScheduledTime()), stamp(wt.GetStartedTime()))
		}
		for _, a := range desc.GetPendingActivities() {
			tq := a.GetActivityOptions().GetTaskQueue().GetName()
			fmt.Fprintf(&b, "  pending activity %s %s on %s: %s, attempt %d/%d, scheduled %s, last started %s, last heartbeat %s, by %q",
				a.GetActivityId(), a.GetActivityType().GetName(), tq, a.GetState(), a.GetAttempt(), a.GetMaximumAttempts(),
				stamp(a.GetScheduledTime()), stamp(a.GetLastStartedTime()), stamp(a.GetLastHeartbeatTime()), a.GetLastWorkerIdentity())
			if f := a.GetLastFailure(); f != nil {
				fmt.Fprintf(&b, ", last failure: %s", f.GetMessage())
			}
			b.WriteString("\n")
			if q := (queue{tq, enumspb.TASK_QUEUE_TYPE_ACTIVITY}); tq != "" && !slices.Contains(queues, q) {
				queues = append(queues, q)
			}
		}
	}

	b.WriteString("  history:\n")
	var first time.Time
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			fmt.Fprintf(&b, "    (history: %v)\n", err)
			break
		}
		at := ev.GetEventTime().AsTime()
		if first.IsZero() {
			first = at
		}
		fmt.Fprintf(&b, "    %3d %+8.3fs %s%s\n", ev.GetEventId(), at.Sub(first).Seconds(), ev.GetEventType(), eventDetail(ev))
	}

	for _, q := range queues {
		logPollers(ctx, &b, c, q.name, q.typ)
	}

	qctx, qcancel := context.WithTimeout(ctx, queryAttempt)
	defer qcancel()
	if v, err := c.QueryWorkflow(qctx, id, "", jobapi.EventsQuery, 0); err != nil {
		fmt.Fprintf(&b, "  events query: %v\n", err)
	} else {
		var evs []jobapi.Event
		if err := v.Get(&evs); err != nil {
			fmt.Fprintf(&b, "  events query: %v\n", err)
		}
		b.WriteString("  events (the job's own):\n")
		for _, e := range evs {
			fmt.Fprintf(&b, "    %3d %s %-8s %s %s %s %s\n", e.Seq, e.Time.UTC().Format("15:04:05.000"), e.Kind, e.CallID, e.Decision, e.Layer, e.Text)
		}
	}
	t.Log(b.String())
}

// logPollers writes who polled task queue q lately, and when.
func logPollers(ctx context.Context, b *strings.Builder, c client.Client, q string, typ enumspb.TaskQueueType) {
	resp, err := c.DescribeTaskQueue(ctx, q, typ)
	if err != nil {
		fmt.Fprintf(b, "  %s queue %s: %v\n", typ, q, err)
		return
	}
	fmt.Fprintf(b, "  %s queue %s: %d pollers\n", typ, q, len(resp.GetPollers()))
	for _, p := range resp.GetPollers() {
		fmt.Fprintf(b, "    %s last polled %s\n", p.GetIdentity(), stamp(p.GetLastAccessTime()))
	}
}

// eventDetail is what an event names that tells one like it apart: the
// activity and its queue, the timer, the signal, why a task failed or timed
// out.
func eventDetail(ev *historypb.HistoryEvent) string {
	switch {
	case ev.GetActivityTaskScheduledEventAttributes() != nil:
		a := ev.GetActivityTaskScheduledEventAttributes()
		return fmt.Sprintf(" %s %s on %s", a.GetActivityId(), a.GetActivityType().GetName(), a.GetTaskQueue().GetName())
	case ev.GetActivityTaskStartedEventAttributes() != nil:
		a := ev.GetActivityTaskStartedEventAttributes()
		return fmt.Sprintf(" (scheduled %d) attempt %d by %q", a.GetScheduledEventId(), a.GetAttempt(), a.GetIdentity())
	case ev.GetActivityTaskCompletedEventAttributes() != nil:
		return fmt.Sprintf(" (scheduled %d)", ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId())
	case ev.GetActivityTaskFailedEventAttributes() != nil:
		a := ev.GetActivityTaskFailedEventAttributes()
		return fmt.Sprintf(" (scheduled %d): %s", a.GetScheduledEventId(), a.GetFailure().GetMessage())
	case ev.GetActivityTaskTimedOutEventAttributes() != nil:
		a := ev.GetActivityTaskTimedOutEventAttributes()
		return fmt.Sprintf(" (scheduled %d): %s", a.GetScheduledEventId(), a.GetFailure().GetMessage())
	case ev.GetWorkflowTaskScheduledEventAttributes() != nil:
		a := ev.GetWorkflowTaskScheduledEventAttributes()
		return fmt.Sprintf(" on %s (%s) attempt %d", a.GetTaskQueue().GetName(), a.GetTaskQueue().GetKind(), a.GetAttempt())
	case ev.GetWorkflowTaskStartedEventAttributes() != nil:
		return fmt.Sprintf(" by %q", ev.GetWorkflowTaskStartedEventAttributes().GetIdentity())
	case ev.GetWorkflowTaskTimedOutEventAttributes() != nil:
		return " " + ev.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType().String()
	case ev.GetWorkflowTaskFailedEventAttributes() != nil:
		a := ev.GetWorkflowTaskFailedEventAttributes()
		return fmt.Sprintf(" %s: %s", a.GetCause(), a.GetFailure().GetMessage())
	case ev.GetTimerStartedEventAttributes() != nil:
		a := ev.GetTimerStartedEventAttributes()
		return fmt.Sprintf(" %s %s", a.GetTimerId(), a.GetStartToFireTimeout().AsDuration())
	case ev.GetWorkflowExecutionSignaledEventAttributes() != nil:
		return " " + ev.GetWorkflowExecutionSignaledEventAttributes().GetSignalName()
	case ev.GetMarkerRecordedEventAttributes() != nil:
		return " " + ev.GetMarkerRecordedEventAttributes().GetMarkerName()
	case ev.GetWorkflowExecutionUpdateAcceptedEventAttributes() != nil:
		return " " + ev.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetName()
	}
	return ""
}

// stamp is a server time as a UTC clock reading, "-" for none.
func stamp(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return "-"
	}
	return ts.AsTime().UTC().Format("15:04:05.000")
}
