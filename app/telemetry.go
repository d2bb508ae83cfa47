package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"
)

// TelemetryOptions say where a worker's metrics and traces go.
type TelemetryOptions struct {
	// MetricsAddr is host:port of the Prometheus endpoint (/metrics);
	// "" serves no metrics (CUSTOS_METRICS_ADDR).
	MetricsAddr string
	// OTLPEndpoint turns tracing on; the exporter itself reads it and the
	// other OTEL_EXPORTER_OTLP_* settings from the environment
	// (OTEL_EXPORTER_OTLP_ENDPOINT).
	OTLPEndpoint string
	// Host names this worker in traces and logs.
	Host   string
	Logger *slog.Logger
}

// TelemetryFromEnv reads CUSTOS_METRICS_ADDR and OTEL_EXPORTER_OTLP_ENDPOINT
// (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
func TelemetryFromEnv(host string, log *slog.Logger) TelemetryOptions {
	ep := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if ep == "" {
		ep = os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	return TelemetryOptions{MetricsAddr: os.Getenv("CUSTOS_METRICS_ADDR"), OTLPEndpoint: ep, Host: host, Logger: log}
}

// Telemetry is a worker's running metrics endpoint and trace exporter.
type Telemetry struct {
	// Metrics is the SDK metrics handler (Temporal's own metrics and
	// custos'); nil when metrics are off.
	Metrics client.MetricsHandler
	// Tracing is the SDK's OpenTelemetry interceptor; nil when tracing is
	// off.
	Tracing interceptor.Interceptor
	// MetricsURL is where /metrics is served, e.g.
	// "http://127.0.0.1:9090/metrics"; "" when metrics are off.
	MetricsURL string

	shutdown []func(context.Context) error
}

// StartTelemetry starts what o asks for; nothing when both are off.
func StartTelemetry(ctx context.Context, o TelemetryOptions) (*Telemetry, error) {
	t := &Telemetry{}
	if o.MetricsAddr != "" {
		if err := t.startMetrics(o); err != nil {
			return nil, err
		}
	}
	if o.OTLPEndpoint != "" {
		if err := t.startTracing(ctx, o); err != nil {
			_ = t.Close(ctx)
			return nil, err
		}
	}
	return t, nil
}

func (t *Telemetry) startMetrics(o TelemetryOptions) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return fmt.Errorf("metrics: Prometheus exporter: %w", err)
	}
	mp := metric.NewMeterProvider(metric.WithReader(exp))
	t.Metrics = temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: mp.Meter("custos"),
		// Counters only go up: exported as Prometheus counters (_total).
		UseMonotonicCounters: true,
		// The default panics; a metric that cannot be made must not take
		// a job down with it.
		OnError: func(err error) {
			if o.Logger != nil {
				o.Logger.Warn("metric not recorded", "error", err)
			}
		},
	})

	l, err := net.Listen("tcp", o.MetricsAddr)
	if err != nil {
		_ = mp.Shutdown(context.Background())
		return fmt.Errorf("metrics: CUSTOS_METRICS_ADDR=%s: %w", o.MetricsAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) && o.Logger != nil {
			o.Logger.Error("metrics endpoint stopped", "error", err)
		}
	}()
	t.MetricsURL = "http://" + l.Addr().String() + "/metrics"
	t.shutdown = append(t.shutdown, srv.Shutdown, mp.Shutdown)
	if o.Logger != nil {
		o.Logger.Info("serving Prometheus metrics", "url", t.MetricsURL)
	}
	return nil
}

func (t *Telemetry) startTracing(ctx context.Context, o TelemetryOptions) error {
	exp, err := otlptracegrpc.New(ctx)
	if err != nil {
		return fmt.Errorf("tracing: OTLP exporter for %s: %w", o.OTLPEndpoint, err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName("custos-worker"), semconv.HostName(o.Host)))
	if err != nil {
		res = resource.Default()
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	// Global, so the decision spans made in workflow code (workflows/
	// observe.go) go to the same exporter as the SDK's spans.
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	ti, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{Tracer: tp.Tracer("custos")})
	if err != nil {
		_ = tp.Shutdown(ctx)
		return fmt.Errorf("tracing: interceptor: %w", err)
	}
	t.Tracing = ti
	t.shutdown = append(t.shutdown, tp.Shutdown)
	if o.Logger != nil {
		o.Logger.Info("exporting traces over OTLP", "endpoint", o.OTLPEndpoint)
	}
	return nil
}

// Client returns c with the metrics handler and tracing interceptor set (c
// itself when both are off). The new client shares c's connection; its
// namespace and logger are given again because a derived client does not
// inherit them.
func (t *Telemetry) Client(c client.Client, namespace string, logger *slog.Logger) (client.Client, error) {
	if t.Metrics == nil && t.Tracing == nil {
		return c, nil
	}
	opts := client.Options{Namespace: namespace, MetricsHandler: t.Metrics}
	if logger != nil {
		opts.Logger = tlog.NewStructuredLogger(logger)
	}
	if t.Tracing != nil {
		opts.Interceptors = []interceptor.ClientInterceptor{t.Tracing}
	}
	nc, err := client.NewClientFromExisting(c, opts)
	if err != nil {
		return nil, fmt.Errorf("telemetry: client: %w", err)
	}
	return nc, nil
}

// Close flushes traces and stops the metrics endpoint.
func (t *Telemetry) Close(ctx context.Context) error {
	var errs []error
	for i := len(t.shutdown) - 1; i >= 0; i-- {
		errs = append(errs, t.shutdown[i](ctx))
	}
	return errors.Join(errs...)
}
