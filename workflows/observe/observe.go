// Package observe reports the job's audit records as metrics and its
// decisions as spans, from workflow code, once however often a history is
// replayed. It never imports workflows.
package observe

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/approval"
)

// Metric names custos emits from workflow code. Every audit record passes
// through Record, so decisions are counted in this one place.
const (
	MetricDecisions        = "custos_decisions"         // counter: tool, layer, decision
	MetricApprovals        = "custos_approvals"         // counter: channel, decision (human answers)
	MetricApprovalTimeouts = "custos_approval_timeouts" // counter: tool (nobody answered in time)
	MetricApprovalWait     = "custos_approval_wait"     // timer: channel
	MetricAuditEvents      = "custos_audit_events"      // counter: event
)

// Record reports an audit record as metrics and, for decisions, as a span
// under the job's trace. Metrics go through the workflow's metrics handler,
// which drops them during replay, so a decision is counted once however
// often its history is replayed; the span is skipped during replay for the
// same reason.
func Record(ctx workflow.Context, r approval.AuditRecord) {
	h := workflow.GetMetricsHandler(ctx)
	if r.Event != "" {
		h.WithTags(map[string]string{"event": r.Event}).Counter(MetricAuditEvents).Inc(1)
		return
	}
	h.WithTags(map[string]string{"tool": r.Tool, "layer": string(r.Layer), "decision": string(r.Decision)}).
		Counter(MetricDecisions).Inc(1)
	if r.Layer == approval.LayerHuman {
		if r.Approver == "timeout" {
			h.WithTags(map[string]string{"tool": r.Tool}).Counter(MetricApprovalTimeouts).Inc(1)
		} else {
			h.WithTags(map[string]string{"channel": r.Channel, "decision": string(r.Decision)}).
				Counter(MetricApprovals).Inc(1)
		}
		h.WithTags(map[string]string{"channel": r.Channel}).
			Timer(MetricApprovalWait).Record(time.Duration(r.WaitMillis) * time.Millisecond)
	}
	decisionSpan(ctx, r)
}

// decisionSpan records the decision as a child span of the workflow's span
// (set by the SDK's tracing interceptor when tracing is on), ending where it
// was made and lasting as long as the call waited for a person.
func decisionSpan(ctx workflow.Context, r approval.AuditRecord) {
	if workflow.IsReplaying(ctx) {
		return
	}
	parent, ok := temporalotel.SpanFromWorkflowContext(ctx)
	if !ok || !parent.SpanContext().IsValid() {
		return
	}
	end := workflow.Now(ctx)
	start := end.Add(-time.Duration(r.WaitMillis) * time.Millisecond)
	_, span := otel.Tracer("custos/workflows").Start(trace.ContextWithSpan(context.Background(), parent),
		"Decision:"+r.Tool, trace.WithTimestamp(start), trace.WithAttributes(
			attribute.String("custos.call_id", r.CallID),
			attribute.String("custos.tool", r.Tool),
			attribute.String("custos.layer", string(r.Layer)),
			attribute.String("custos.decision", string(r.Decision)),
			attribute.String("custos.rule", r.Rule),
			attribute.String("custos.channel", r.Channel),
		))
	span.End(trace.WithTimestamp(end))
}
