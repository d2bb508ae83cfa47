package e2e

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkMCPInterruptHungCall is the time from an interrupt (the Update
// sent) to the model's next request, while an MCP call waits on a server
// that answers nothing any more (goal: 2 s). Each op is one job; the
// metric is the median of the ops.
func BenchmarkMCPInterruptHungCall(b *testing.B) {
	h := startHungMCP(b)
	var took []time.Duration
	for i := 0; i < b.N; i++ {
		id := h.start(b)
		_, sent := h.interrupt(b, id)
		deadline := time.Now().Add(time.Minute)
		for {
			if _, at := h.requests(); len(at) >= 2 {
				took = append(took, at[1].Sub(sent))
				break
			}
			if time.Now().After(deadline) {
				b.Fatal("the model never got the interrupt's text")
			}
			time.Sleep(5 * time.Millisecond)
		}
		endJob(b, h.c, id)
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "interrupt-to-model-p50-ms")
	b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "interrupt-to-model-max-ms")
}
