package testenv

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/custos-dev/custos/approval"
)

func TestDecisionsLeaveOutEvents(t *testing.T) {
	recs := []approval.AuditRecord{
		{Seq: 1, CallID: "w1", Decision: approval.Allow, Layer: approval.LayerHuman},
		{Seq: 2, CallID: "w1", Event: "signal-ignored"},
		{Seq: 3, CallID: "b1", Decision: approval.Deny, Layer: approval.LayerRules},
	}
	got := Decisions(recs)
	assert.Len(t, got, 2)
	assert.Equal(t, 1, got["w1"].Seq)
	assert.Equal(t, approval.Deny, got["b1"].Decision)
}

func TestStopOfNoEnv(t *testing.T) {
	var e *Env
	e.Stop() // TestMain stops the shared Env even when no test started it
	(&Env{}).Stop()
}

// hungClient is a client whose status queries hang until their context
// ends, and which knows nothing else of the job.
type hungClient struct {
	client.Client
	queries atomic.Int32
}

func (c *hungClient) QueryWorkflow(ctx context.Context, _, _, _ string, _ ...any) (converter.EncodedValue, error) {
	c.queries.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

func (c *hungClient) DescribeWorkflowExecution(context.Context, string, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	return nil, errors.New("describe: no such job")
}

func (c *hungClient) GetWorkflowHistory(context.Context, string, string, bool, enumspb.HistoryEventFilterType) client.HistoryEventIterator {
	return emptyHistory{}
}

type emptyHistory struct{}

func (emptyHistory) HasNext() bool                          { return false }
func (emptyHistory) Next() (*historypb.HistoryEvent, error) { return nil, errors.New("none") }

// recorder is a testing.TB that keeps what it is told instead of failing.
type recorder struct {
	testing.TB
	logs  []string
	fatal string
}

func (r *recorder) Helper()                 {}
func (r *recorder) Log(args ...any)         { r.logs = append(r.logs, fmt.Sprint(args...)) }
func (r *recorder) Logf(f string, a ...any) { r.logs = append(r.logs, fmt.Sprintf(f, a...)) }
func (r *recorder) Fatalf(f string, a ...any) {
	r.fatal = fmt.Sprintf(f, a...)
	runtime.Goexit()
}

// A query that hangs costs one attempt, not the wait: WaitPending asks
// again, and its failure says what the last query returned, after logging
// what the server knows of the job.
func TestWaitPendingAsksAgainAfterAHungQuery(t *testing.T) {
	defer func(d time.Duration) { queryAttempt = d }(queryAttempt)
	queryAttempt = 300 * time.Millisecond
	c := &hungClient{}
	r := &recorder{TB: t}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		WaitPending(r, c, "job", "b1", 1500*time.Millisecond)
	}()
	<-done
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.GreaterOrEqual(t, c.queries.Load(), int32(4), "a hung query is asked again (and LogJob asks for the events once)")
	assert.Contains(t, r.fatal, "call b1 of job never became pending within 1.5s")
	assert.Contains(t, r.fatal, context.DeadlineExceeded.Error())
	logs := strings.Join(r.logs, "\n")
	assert.Contains(t, logs, "describe: no such job")
	assert.Contains(t, logs, "events query: "+context.DeadlineExceeded.Error())
}
