package app

import (
	"context"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"

	"github.com/custos-dev/custos/activities/api"
)

// Metric names emitted around activities, by the worker's interceptor, so
// the model and tool code need not know about metrics.
const (
	MetricModelLatency = "custos_model_latency" // timer: outcome
	MetricModelTokens  = "custos_model_tokens"  // counter: kind (prompt, completion)
	MetricToolDuration = "custos_tool_duration" // timer: tool, outcome
)

// toolActivities are the activities that run a tool call for the model.
var toolActivities = map[string]bool{
	api.ReadActivity: true, api.GlobActivity: true, api.GrepActivity: true,
	api.WriteActivity: true, api.EditActivity: true, api.BashActivity: true,
}

// activityObserver measures model calls and tool calls and logs each tool
// call with its job, call and host.
type activityObserver struct {
	interceptor.WorkerInterceptorBase
	log  *slog.Logger
	host string
}

func (o *activityObserver) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &observedActivity{o: o}
	i.Next = next
	return i
}

type observedActivity struct {
	interceptor.ActivityInboundInterceptorBase
	o *activityObserver
}

func (i *observedActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	begin := time.Now()
	res, err := i.Next.ExecuteActivity(ctx, in)
	took := time.Since(begin)
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	info := activity.GetInfo(ctx)
	h := activity.GetMetricsHandler(ctx)
	switch name := info.ActivityType.Name; {
	case name == api.ModelActivity:
		h.WithTags(map[string]string{"outcome": outcome}).Timer(MetricModelLatency).Record(took)
		if r, ok := res.(api.ModelResponse); ok && err == nil {
			h.WithTags(map[string]string{"kind": "prompt"}).Counter(MetricModelTokens).Inc(int64(r.Usage.PromptTokens))
			h.WithTags(map[string]string{"kind": "completion"}).Counter(MetricModelTokens).Inc(int64(r.Usage.CompletionTokens))
		}
	case toolActivities[name]:
		if r, ok := res.(api.ToolResult); ok && r.IsError && err == nil {
			outcome = "tool_error"
		}
		h.WithTags(map[string]string{"tool": name, "outcome": outcome}).Timer(MetricToolDuration).Record(took)
		call := ""
		if len(in.Args) > 0 {
			if req, ok := in.Args[0].(api.ToolRequest); ok {
				call = req.CallID
			}
		}
		i.o.log.Info("tool call", "job", info.WorkflowExecution.ID, "call", call, "host", i.o.host,
			"tool", name, "attempt", info.Attempt, "outcome", outcome, "duration", took)
	}
	return res, err
}
