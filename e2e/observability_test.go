package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// One job (an allowed Read, a Write approved through the decide Update, an
// answer) on a worker with CUSTOS_METRICS_ADDR and OTEL_EXPORTER_OTLP_ENDPOINT
// set: the Prometheus endpoint, scraped over HTTP, counts the job's
// decisions by layer, its approval by channel, its tools and its tokens
// next to the SDK's own metrics; an OTLP receiver on loopback gets one trace
// with the job's model calls, decisions and tool calls as spans.
func TestJobMetricsAndTrace(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	otlp := startOTLPReceiver(t)
	t.Setenv("CUSTOS_METRICS_ADDR", "127.0.0.1:0")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+otlp.addr)
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	prevTP := otel.GetTracerProvider()
	t.Cleanup(func() { otel.SetTracerProvider(prevTP) })

	ctx := context.Background()
	tel, err := app.StartTelemetry(ctx, app.TelemetryFromEnv("host-a", testenv.Logger()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = tel.Close(context.Background()) })
	require.NotEmpty(t, tel.MetricsURL)
	require.NotNil(t, tel.Tracing)
	wc, err := tel.Client(c, "default", testenv.Logger())
	require.NoError(t, err)
	t.Cleanup(wc.Close)

	usage := openai.Usage{PromptTokens: 100, CompletionTokens: 7}
	withUsage := func(r demomodel.Reply) demomodel.Reply { r.Usage = usage; return r }
	_, base := testenv.StartModel(t, demomodel.Script(
		withUsage(demomodel.Calls(demomodel.ToolCall("r1", "Read", map[string]any{"file_path": "a.txt"}))),
		withUsage(demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "b.txt", "content": "B"}))),
		withUsage(demomodel.Say("done")),
	))
	testenv.StartWorkers(t, wc, base, app.Options{Host: "host-a"})
	ws := testenv.Workspace(t)
	require.NoError(t, writeFile(ws, "a.txt", "alpha\n"))

	run := testenv.StartJob(t, wc, "observed-"+time.Now().Format("150405.000000"), jobapi.JobInput{Once: true, Task: "observe me", Workspace: ws})
	testenv.WaitPending(t, c, run.GetID(), "w1", pendingWait)
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: jobapi.DecideUpdate,
		Args:         []any{jobapi.ApprovalDecision{CallID: "w1", Decision: "allow", By: "alice", Channel: "slack"}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil))
	testenv.Finished(t, wc, run.GetID(), 2*time.Minute)

	// Metrics, as Prometheus scrapes them.
	m := scrape(t, tel.MetricsURL)
	assert.Equal(t, 1.0, m.value("custos_decisions_total", "tool", "Read", "layer", "readonly", "decision", "allow"))
	assert.Equal(t, 1.0, m.value("custos_decisions_total", "tool", "Write", "layer", "human", "decision", "allow"))
	assert.Equal(t, 1.0, m.value("custos_approvals_total", "channel", "slack", "decision", "allow"))
	assert.Equal(t, 1.0, m.value("custos_approval_wait_seconds_count", "channel", "slack"))
	assert.Equal(t, 0.0, m.value("custos_approval_timeouts_total"))
	assert.Equal(t, 300.0, m.value("custos_model_tokens_total", "kind", "prompt"))
	assert.Equal(t, 21.0, m.value("custos_model_tokens_total", "kind", "completion"))
	assert.Equal(t, 3.0, m.value("custos_model_latency_seconds_count", "outcome", "ok"))
	assert.Equal(t, 1.0, m.value("custos_tool_duration_seconds_count", "tool", "Read", "outcome", "ok"))
	assert.Equal(t, 1.0, m.value("custos_tool_duration_seconds_count", "tool", "Write", "outcome", "ok"))
	// The SDK's own metrics come through the same handler.
	assert.GreaterOrEqual(t, m.value("temporal_workflow_completed_total", "workflow_type", jobapi.WorkflowName), 1.0)
	assert.Positive(t, m.value("temporal_activity_execution_latency_seconds_count", "activity_type", api.ModelActivity))

	// Traces: flushed on Close, one trace for the job.
	require.NoError(t, tel.Close(ctx))
	spans := otlp.spans()
	byName := map[string]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	for _, name := range []string{"StartWorkflow:" + jobapi.WorkflowName, "RunWorkflow:" + jobapi.WorkflowName,
		"RunActivity:" + api.ModelActivity, "RunActivity:" + api.ReadActivity, "RunActivity:" + api.WriteActivity,
		"Decision:Read", "Decision:Write"} {
		require.Contains(t, byName, name, "spans: %v", spanNames(spans))
	}
	trace := byName["StartWorkflow:"+jobapi.WorkflowName].TraceId
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "RunActivity:") || strings.HasPrefix(s.Name, "Decision:") || strings.HasPrefix(s.Name, "RunWorkflow:") {
			assert.Equal(t, trace, s.TraceId, "span %s is in the job's trace", s.Name)
		}
	}
	assert.Equal(t, "human", attr(byName["Decision:Write"], "custos.layer"))
	assert.Equal(t, "w1", attr(byName["Decision:Write"], "custos.call_id"))
}

func writeFile(dir, rel, content string) error {
	return os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644)
}

// metrics is one scrape, parsed.
type metrics map[string]*dto.MetricFamily

func scrape(t *testing.T, url string) metrics {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err)
	out := metrics{}
	for name, f := range fams {
		out[name] = f
		// Histograms come as one family; expose their count under the
		// name Prometheus queries use.
		if f.GetType() == dto.MetricType_HISTOGRAM {
			out[name+"_count"] = f
		}
	}
	return out
}

// value sums the samples of name whose labels include the given pairs; 0
// when there are none.
func (m metrics) value(name string, labels ...string) float64 {
	f, ok := m[name]
	if !ok {
		return 0
	}
	var sum float64
	for _, s := range f.Metric {
		have := map[string]string{}
		for _, l := range s.Label {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case s.Counter != nil:
			sum += s.Counter.GetValue()
		case s.Gauge != nil:
			sum += s.Gauge.GetValue()
		case s.Histogram != nil:
			sum += float64(s.Histogram.GetSampleCount())
		}
	}
	return sum
}

// otlpReceiver is an OTLP/gRPC trace collector on loopback that keeps what
// it is sent.
type otlpReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	addr string
	mu   sync.Mutex
	got  []*tracepb.Span
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &otlpReceiver{addr: l.Addr().String()}
	s := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(s, r)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return r
}

func (r *otlpReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.got = append(r.got, ss.Spans...)
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *otlpReceiver) spans() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.got...)
}

func spanNames(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func attr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.GetStringValue()
		}
	}
	return ""
}
