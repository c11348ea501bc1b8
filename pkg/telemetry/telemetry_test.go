package telemetry_test

import (
	"context"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"

	"github.com/agentruntime/agentruntime/pkg/telemetry"
)

func TestSetupWithoutEndpointStillMintsIDs(t *testing.T) {
	p, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "control"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })

	_, span := p.TracerProvider.Tracer("test").Start(context.Background(), "op")
	defer span.End()
	sc := span.SpanContext()
	assert.True(t, sc.TraceID().IsValid(), "trace id must be usable in events even without export")
	assert.True(t, sc.SpanID().IsValid())

	// What the meter provider records is on the Prometheus handler.
	counter, err := p.MeterProvider.Meter("test").Int64Counter("agentruntime.test.calls")
	require.NoError(t, err)
	counter.Add(context.Background(), 3)
	rec := httptest.NewRecorder()
	p.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	assert.Contains(t, rec.Body.String(), "agentruntime_test_calls_total 3")
	assert.Contains(t, rec.Body.String(), "process_resident_memory_bytes", "the process collector is registered")
}

func TestSetupRequiresServiceName(t *testing.T) {
	_, err := telemetry.Setup(context.Background(), telemetry.Config{})
	require.ErrorContains(t, err, "ServiceName")
}

// collector is an in-process OTLP receiver of traces and metrics.
type collector struct {
	collectortrace.UnimplementedTraceServiceServer
	mu      sync.Mutex
	spans   []*tracepb.ResourceSpans
	metrics metricsReceiver
}

type metricsReceiver struct {
	collectormetrics.UnimplementedMetricsServiceServer
	mu    sync.Mutex
	names []string
}

func (m *metricsReceiver) Export(_ context.Context, req *collectormetrics.ExportMetricsServiceRequest) (*collectormetrics.ExportMetricsServiceResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, metric := range sm.GetMetrics() {
				m.names = append(m.names, metric.GetName())
			}
		}
	}
	return &collectormetrics.ExportMetricsServiceResponse{}, nil
}

func (m *metricsReceiver) received() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.names...)
}

// serveCollector starts a collector on a free loopback port.
func serveCollector(t *testing.T) (*collector, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	col := &collector{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, col)
	collectormetrics.RegisterMetricsServiceServer(srv, &col.metrics)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return col, lis.Addr().String()
}

func (c *collector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spans = append(c.spans, req.GetResourceSpans()...)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (c *collector) received() []*tracepb.ResourceSpans {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracepb.ResourceSpans(nil), c.spans...)
}

func TestSetupExportsToOTLPEndpoint(t *testing.T) {
	col, addr := serveCollector(t)
	for _, endpoint := range []string{addr, "http://" + addr} {
		t.Run(endpoint, func(t *testing.T) {
			before := len(col.received())
			p, err := telemetry.Setup(context.Background(), telemetry.Config{
				ServiceName: "tasks", ServiceVersion: "v1.2.3", OTLPEndpoint: endpoint, Insecure: true,
			})
			require.NoError(t, err)

			_, span := p.TracerProvider.Tracer("test").Start(context.Background(), "append-event")
			span.End()
			counter, err := p.MeterProvider.Meter("test").Int64Counter("agentruntime.test.exported")
			require.NoError(t, err)
			counter.Add(context.Background(), 1)

			// Shutdown flushes the batch and the metric reader, so the span
			// and the metric have arrived when it returns.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, p.Shutdown(ctx))

			got := col.received()[before:]
			require.Len(t, got, 1)
			attrs := map[string]string{}
			for _, kv := range got[0].GetResource().GetAttributes() {
				attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
			}
			assert.Equal(t, "tasks", attrs["service.name"])
			assert.Equal(t, "v1.2.3", attrs["service.version"])
			require.Len(t, got[0].GetScopeSpans(), 1)
			require.Len(t, got[0].GetScopeSpans()[0].GetSpans(), 1)
			assert.Equal(t, "append-event", got[0].GetScopeSpans()[0].GetSpans()[0].GetName())
			assert.Contains(t, col.metrics.received(), "agentruntime.test.exported")
		})
	}
}

func TestOperatorEnvOverridesServiceName(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "control-canary")
	col, addr := serveCollector(t)
	p, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "control", OTLPEndpoint: addr, Insecure: true})
	require.NoError(t, err)
	_, span := p.TracerProvider.Tracer("test").Start(context.Background(), "op")
	span.End()
	require.NoError(t, p.Shutdown(context.Background()))
	got := col.received()
	require.Len(t, got, 1)
	for _, kv := range got[0].GetResource().GetAttributes() {
		if kv.GetKey() == "service.name" {
			assert.Equal(t, "control-canary", kv.GetValue().GetStringValue())
		}
	}
}

func TestPropagatorCarriesTraceContextAndBaggage(t *testing.T) {
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled})
	member, err := baggage.NewMember("tenant", "acme")
	require.NoError(t, err)
	bag, err := baggage.New(member)
	require.NoError(t, err)
	ctx := baggage.ContextWithBaggage(trace.ContextWithSpanContext(context.Background(), sc), bag)

	carrier := propagation.MapCarrier{}
	telemetry.Propagator().Inject(ctx, carrier)
	assert.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", carrier["traceparent"])
	assert.Equal(t, "tenant=acme", carrier["baggage"])

	out := telemetry.Propagator().Extract(context.Background(), carrier)
	assert.Equal(t, traceID, trace.SpanContextFromContext(out).TraceID())
	assert.Equal(t, "acme", baggage.FromContext(out).Member("tenant").Value())
}

func TestShutdownNilSafe(t *testing.T) {
	var p *telemetry.Providers
	assert.NoError(t, p.Shutdown(context.Background()))
}
