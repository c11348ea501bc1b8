package telemetry_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
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

	// The meter provider must be usable, even though it records nothing.
	counter, err := p.MeterProvider.Meter("test").Int64Counter("c")
	require.NoError(t, err)
	counter.Add(context.Background(), 1)
}

func TestSetupRequiresServiceName(t *testing.T) {
	_, err := telemetry.Setup(context.Background(), telemetry.Config{})
	require.ErrorContains(t, err, "ServiceName")
}

// collector is an in-process OTLP trace receiver.
type collector struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.ResourceSpans
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
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	col := &collector{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, col)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	for _, endpoint := range []string{lis.Addr().String(), "http://" + lis.Addr().String()} {
		t.Run(endpoint, func(t *testing.T) {
			before := len(col.received())
			p, err := telemetry.Setup(context.Background(), telemetry.Config{
				ServiceName: "tasks", ServiceVersion: "v1.2.3", OTLPEndpoint: endpoint, Insecure: true,
			})
			require.NoError(t, err)

			_, span := p.TracerProvider.Tracer("test").Start(context.Background(), "append-event")
			span.End()

			// Shutdown flushes the batch, so the span has arrived when it returns.
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
		})
	}
}

func TestOperatorEnvOverridesServiceName(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "control-canary")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	col := &collector{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, col)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	p, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "control", OTLPEndpoint: lis.Addr().String(), Insecure: true})
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
