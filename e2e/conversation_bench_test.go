package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// arrivals records when the scripted endpoint first saw a request whose
// last user message is a given text.
type arrivals struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (a *arrivals) handle(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	now := time.Now()
	text := lastUser(req)
	a.mu.Lock()
	if _, ok := a.at[text]; !ok {
		a.at[text] = now
	}
	a.mu.Unlock()
	return demomodel.Say("re: " + text), nil
}

func (a *arrivals) of(text string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.at[text]
	return t, ok
}

// BenchmarkConversationMessageToModel measures, on the embedded server
// (SQLite file) with in-process workers, the time from sending a message
// to a job that waits for one to the model request carrying it reaching
// the scripted endpoint: b.N messages through the message Update and b.N
// through the message signal, interleaved so both see the same server and
// the same conversation length. Each is answered at once, and the next is
// sent once the job waits again.
func BenchmarkConversationMessageToModel(b *testing.B) {
	srv := testenv.StartServer(b, devserver.Options{DBFile: filepath.Join(b.TempDir(), "temporal.db"), UIPort: -1})
	c := testenv.Dial(b, srv)
	model := &arrivals{at: map[string]time.Time{}}
	_, base := testenv.StartModel(b, model.handle)
	testenv.StartWorkers(b, c, base, app.Options{})
	id := fmt.Sprintf("conv-bench-%d", time.Now().UnixNano())
	testenv.StartJob(b, c, id, jobapi.JobInput{Task: "hello", Workspace: testenv.Workspace(b), ContextWindow: 10_000_000})
	waitAnswer(b, c, id, "re: hello", time.Minute)

	var viaUpdate, viaSignal []time.Duration
	b.ResetTimer()
	for i := range b.N {
		viaUpdate = append(viaUpdate, messageLatency(b, c, model, id, fmt.Sprintf("update %d", i), true))
		viaSignal = append(viaSignal, messageLatency(b, c, model, id, fmt.Sprintf("signal %d", i), false))
	}
	b.StopTimer()
	reportLatency(b, "", viaUpdate)
	reportLatency(b, "signal-", viaSignal)
}

// messageLatency sends text to job id, by the message Update or signal,
// and returns how long it took to reach the endpoint, once the job waits
// again with its answer.
func messageLatency(b *testing.B, c client.Client, model *arrivals, id, text string, viaUpdate bool) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := jobapi.Message{Text: text, By: "bench"}
	sent := time.Now()
	if viaUpdate {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: jobapi.MessageUpdate,
			Args: []any{m}, WaitForStage: client.WorkflowUpdateStageCompleted})
		require.NoError(b, err)
		var res jobapi.MessageResult
		require.NoError(b, h.Get(ctx, &res))
		require.Equal(b, "next", res.Delivery)
	} else {
		require.NoError(b, c.SignalWorkflow(ctx, id, "", jobapi.MessageSignal, m))
	}
	waitAnswer(b, c, id, "re: "+text, time.Minute)
	at, ok := model.of(text)
	require.True(b, ok, "the endpoint never saw %q", text)
	return at.Sub(sent)
}

// reportLatency reports the median and p99 of d in milliseconds, as
// ms/<prefix>median and ms/<prefix>p99.
func reportLatency(b *testing.B, prefix string, d []time.Duration) {
	slices.Sort(d)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	med := d[len(d)/2]
	p99 := d[min(len(d)-1, (len(d)*99+99)/100-1)]
	b.ReportMetric(ms(med), "ms/"+prefix+"median")
	b.ReportMetric(ms(p99), "ms/"+prefix+"p99")
	b.Logf("%smessage to model: n=%d median %.1f ms, p99 %.1f ms, min %.1f ms, max %.1f ms",
		prefix, len(d), ms(med), ms(p99), ms(d[0]), ms(d[len(d)-1]))
}
