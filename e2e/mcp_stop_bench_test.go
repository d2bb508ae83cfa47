package e2e

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkMCPInterruptHungCall is the time from an interrupt (the Update
// sent) to the model's next request, while an MCP call waits on a server
// that never answers it (goal: 2 s): hang ignores the call's cancellation
// and goes on serving; freeze stops the whole server (SIGSTOP), which the
// kill continues to handle its SIGTERM; deaf ignores SIGTERM, and dies at
// the SIGKILL after a server's kill grace (500 ms). The next turn's
// listing waits for the death (two copies of a server never run at once).
// Each op is one job; the metrics are over the ops.
func BenchmarkMCPInterruptHungCall(b *testing.B) {
	for _, tool := range []string{"hang", "freeze", "deaf"} {
		b.Run(tool, func(b *testing.B) {
			h := startHungMCP(b)
			h.tool = tool
			benchInterrupt(b, h)
		})
	}
}

func benchInterrupt(b *testing.B, h *hungMCP) {
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
		// Ended once it waits: an end while its answer's workflow task
		// runs can fail that task (UnhandledCommand), and the Update with it.
		waitAnswer(b, h.c, id, "stopped", time.Minute)
		endJob(b, h.c, id)
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "interrupt-to-model-p50-ms")
	b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "interrupt-to-model-max-ms")
}
