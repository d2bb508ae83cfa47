package activities

import (
	"context"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/custos-dev/custos/sandbox"
)

// Metric names of the sandbox, emitted by the Bash activity through the
// activity's metrics handler (the worker's, with the SDK's activity tags).
const (
	MetricSandboxKills     = "custos_sandbox_kills"      // counter: reason (timeout, memory, …)
	MetricSandboxLimitsHit = "custos_sandbox_limits_hit" // counter: limit (cpu, memory, output, processes, …)
)

// observeBash counts a killed command by why it was killed, and separately
// the resource limit it ran into, if any.
func observeBash(ctx context.Context, res sandbox.Result) {
	// Outside an activity (tools called directly, as tests and the
	// starter's sandbox exec do) there is no metrics handler to ask.
	if !res.Killed || !activity.IsActivity(ctx) {
		return
	}
	h := activity.GetMetricsHandler(ctx)
	reason := killReasonTag(res.KillReason)
	h.WithTags(map[string]string{"reason": reason}).Counter(MetricSandboxKills).Inc(1)
	if limit, ok := limitHit(res.KillReason); ok {
		h.WithTags(map[string]string{"limit": limit}).Counter(MetricSandboxLimitsHit).Inc(1)
	}
}

// killReasonTag keeps the label's values few: the sandbox's reasons are a
// short word or two, sometimes with a parenthesised detail.
func killReasonTag(reason string) string {
	if reason == "" {
		return "killed"
	}
	if i := strings.Index(reason, " ("); i > 0 {
		reason = reason[:i]
	}
	return reason
}

// limitHit names the resource limit behind a kill reason: "cpu limit" is
// cpu, "timeout (process limit reached)" is processes.
func limitHit(reason string) (string, bool) {
	if strings.Contains(reason, "process limit") {
		return "processes", true
	}
	if word, ok := strings.CutSuffix(killReasonTag(reason), " limit"); ok {
		return strings.ReplaceAll(word, " ", "_"), true
	}
	return "", false
}
