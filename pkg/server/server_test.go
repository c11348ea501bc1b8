package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/server"
)

const testKey = "ar_test_key_1234"

// syncBuffer collects log output written from server goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns every JSON log record written so far.
func (b *syncBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		out = append(out, rec)
	}
	return out
}

func (b *syncBuffer) find(t *testing.T, match func(map[string]any) bool) map[string]any {
	t.Helper()
	for _, rec := range b.records(t) {
		if match(rec) {
			return rec
		}
	}
	return nil
}

type harness struct {
	srv    *server.Server
	conn   *grpc.ClientConn
	types  probeTypes
	probe  *probe
	spans  *tracetest.InMemoryExporter
	logs   *syncBuffer
	stop   context.CancelFunc
	served chan error
	dial   func(context.Context) (net.Conn, error)
}

type option func(*server.Config)

func start(t *testing.T, opts ...option) *harness {
	t.Helper()
	return startWith(t, nil, opts...)
}

// startWith also registers extra services: gRPC only accepts them before Serve.
func startWith(t *testing.T, register func(*server.Server), opts ...option) *harness {
	t.Helper()
	authn, err := auth.New(&auth.Config{APIKeys: []auth.APIKeyConfig{
		{Name: "ci-bot", Tenant: "acme", Role: auth.RoleOperator, Key: testKey},
	}})
	require.NoError(t, err)

	h := &harness{types: newProbeTypes(t), spans: tracetest.NewInMemoryExporter(), logs: &syncBuffer{}, served: make(chan error, 1)}
	h.probe = newProbe(h.types)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(h.spans))
	cfg := server.Config{
		Logger:          slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		TracerProvider:  tp,
		Authenticator:   authn,
		ShutdownTimeout: 5 * time.Second,
		Descriptors:     h.types.files,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h.srv, err = server.New(cfg)
	require.NoError(t, err)
	h.probe.register(h.srv.GRPC())
	if register != nil {
		register(h.srv)
	}

	lis := newPipeListener()
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	h.dial = lis.DialContext
	go func() { h.served <- h.srv.Serve(ctx, lis) }()

	h.conn, err = grpc.NewClient("passthrough:///pipe",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	)
	require.NoError(t, err)
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-h.served:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after shutdown")
		}
		_ = h.conn.Close()
		_ = tp.Shutdown(context.Background())
	})
	return h
}

// pipeListener is the harness's network: in memory, with an address that
// is not loopback (the server takes it for a remote one), and the deadline
// semantics net.Conn promises, because net/http relies on them. gRPC's
// bufconn does not keep those: its SetReadDeadline stops the old timer
// without waiting for a callback that has already fired, so clearing a
// deadline that is expiring at that moment leaves the timeout set. net/http
// does exactly that after every HTTP/1.1 response: it interrupts its
// background read with a deadline in the past, then clears it. The next
// read on the connection (the background read while the next request on
// the kept-alive connection is served) then fails at once, net/http takes
// that for the client going away and cancels the request's context, and
// grpc.Server.ServeHTTP behind the transcoder gives up on the call:
// Connect callers saw 500 "missing trailer" or "incorrect codec" a few
// runs in a thousand. net.Pipe waits for a fired timer's callback before
// it clears a deadline.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// DialContext connects to the listener and returns the client's end.
func (l *pipeListener) DialContext(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-ctx.Done():
		_ = client.Close()
		_ = server.Close()
		return nil, ctx.Err()
	case <-l.done:
		_ = client.Close()
		_ = server.Close()
		return nil, net.ErrClosed
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

func ctxWithKey(key string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
}

func (h *harness) echo(ctx context.Context, req any) (*harnessResp, error) {
	resp := h.types.response()
	err := h.conn.Invoke(ctx, echoMethod, req, resp)
	if err != nil {
		return nil, err
	}
	return &harnessResp{tenant: h.types.str(resp, "tenant"), subject: h.types.str(resp, "subject")}, nil
}

type harnessResp struct{ tenant, subject string }

func requireCode(t *testing.T, err error, want codes.Code) *status.Status {
	t.Helper()
	require.Error(t, err)
	st := status.Convert(err)
	require.Equal(t, want, st.Code(), "status: %v", st)
	return st
}

func TestHealthServingThenNotServingOnShutdown(t *testing.T) {
	h := start(t, func(c *server.Config) { c.ShutdownTimeout = 200 * time.Millisecond })
	health := healthpb.NewHealthClient(h.conn)
	ctx := context.Background()

	got, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, got.GetStatus(), "not ready until MarkServing")

	h.srv.MarkServing(probeService)
	for _, name := range []string{"", probeService} {
		got, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: name})
		require.NoError(t, err)
		assert.Equal(t, healthpb.HealthCheckResponse_SERVING, got.GetStatus(), "service %q", name)
	}

	watch, err := health.Watch(ctx, &healthpb.HealthCheckRequest{Service: probeService})
	require.NoError(t, err)
	first, err := watch.Recv()
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, first.GetStatus())

	h.stop()
	next, err := watch.Recv()
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, next.GetStatus())

	// The open watch holds GracefulStop; ShutdownTimeout bounds it.
	select {
	case err := <-h.served:
		require.NoError(t, err)
		h.served <- nil // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return within the shutdown bound")
	}
	_, err = watch.Recv()
	require.Error(t, err, "the watch is cut once the bound has passed")
}

func TestGracefulStopLetsInFlightCallsFinish(t *testing.T) {
	h := start(t)
	h.srv.MarkServing(probeService)

	result := make(chan error, 1)
	go func() {
		resp := h.types.response()
		result <- h.conn.Invoke(ctxWithKey(testKey), blockMethod, h.types.request("s1"), resp)
	}()
	<-h.probe.entered

	h.stop()
	// New calls are refused while the in-flight one is still running.
	require.Eventually(t, func() bool {
		_, err := healthpb.NewHealthClient(h.conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
		return err != nil
	}, 5*time.Second, 10*time.Millisecond)
	select {
	case err := <-h.served:
		t.Fatalf("Serve returned (%v) while a call was in flight", err)
	default:
	}

	close(h.probe.release)
	require.NoError(t, <-result)
}

func TestReflectionListsServicesWithoutCredentials(t *testing.T) {
	h := start(t)
	stream, err := reflectionpb.NewServerReflectionClient(h.conn).ServerReflectionInfo(context.Background())
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	assert.Contains(t, names, "grpc.health.v1.Health")
	assert.Contains(t, names, probeService)
	require.NoError(t, stream.CloseSend())
}

func TestAuthentication(t *testing.T) {
	h := start(t)
	h.srv.MarkServing()

	t.Run("health is exempt", func(t *testing.T) {
		_, err := healthpb.NewHealthClient(h.conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
	})
	t.Run("no credentials", func(t *testing.T) {
		_, err := h.echo(context.Background(), h.types.request("s1"))
		st := requireCode(t, err, codes.Unauthenticated)
		assert.Contains(t, st.Message(), "missing credentials")
	})
	t.Run("wrong key", func(t *testing.T) {
		_, err := h.echo(ctxWithKey("nope"), h.types.request("s1"))
		requireCode(t, err, codes.Unauthenticated)
	})
	t.Run("authentication comes before validation", func(t *testing.T) {
		_, err := h.echo(context.Background(), h.types.request(""))
		requireCode(t, err, codes.Unauthenticated)
	})
	t.Run("stream without credentials", func(t *testing.T) {
		stream, err := h.conn.NewStream(context.Background(), &grpc.StreamDesc{ClientStreams: true}, streamMethod)
		require.NoError(t, err)
		_ = stream.SendMsg(h.types.request("s1"))
		_ = stream.CloseSend()
		requireCode(t, stream.RecvMsg(h.types.response()), codes.Unauthenticated)
	})
	t.Run("principal reaches the handler", func(t *testing.T) {
		resp, err := h.echo(ctxWithKey(testKey), h.types.request("s1"))
		require.NoError(t, err)
		assert.Equal(t, "acme", resp.tenant)
		assert.Equal(t, "ci-bot", resp.subject)
	})
	t.Run("principal reaches a stream handler", func(t *testing.T) {
		stream, err := h.conn.NewStream(ctxWithKey(testKey), &grpc.StreamDesc{ClientStreams: true}, streamMethod)
		require.NoError(t, err)
		require.NoError(t, stream.SendMsg(h.types.request("s1")))
		require.NoError(t, stream.CloseSend())
		resp := h.types.response()
		require.NoError(t, stream.RecvMsg(resp))
		assert.Equal(t, "acme", h.types.str(resp, "tenant"))
	})
}

func TestAnonymousDevMode(t *testing.T) {
	h := start(t, func(c *server.Config) { c.Authenticator = auth.Anonymous("dev") })
	resp, err := h.echo(context.Background(), h.types.request("s1"))
	require.NoError(t, err)
	assert.Equal(t, "dev", resp.tenant)
}

func TestNewRequiresAuthenticator(t *testing.T) {
	_, err := server.New(server.Config{})
	require.ErrorContains(t, err, "Authenticator")
}

func TestPanicBecomesInternalAndServerKeepsServing(t *testing.T) {
	h := start(t)
	ctx := ctxWithKey(testKey)

	_, err := h.echo(ctx, h.types.panicking())
	st := requireCode(t, err, codes.Internal)
	assert.Equal(t, "internal error", st.Message(), "panic details must not reach the caller")

	stream, err := h.conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true}, streamMethod)
	require.NoError(t, err)
	_ = stream.SendMsg(h.types.panicking())
	_ = stream.CloseSend()
	requireCode(t, stream.RecvMsg(h.types.response()), codes.Internal)

	resp, err := h.echo(ctx, h.types.request("s1"))
	require.NoError(t, err)
	assert.Equal(t, "acme", resp.tenant)

	rec := h.logs.find(t, func(r map[string]any) bool {
		return r["msg"] == "grpc handler panicked" && r["grpc.method"] == echoMethod
	})
	require.NotNil(t, rec, "the panic is logged")
	assert.Equal(t, "ERROR", rec["level"])
	assert.Equal(t, "probe asked to panic", rec["panic"])
	assert.Equal(t, "acme", rec["tenant"])
	assert.Contains(t, rec["stack"], "(*probe).echo", "the stack points at the handler")
}

func TestValidationUnary(t *testing.T) {
	h := start(t)
	_, err := h.echo(ctxWithKey(testKey), h.types.request("", "ok", ""))
	st := requireCode(t, err, codes.InvalidArgument)
	assert.Contains(t, st.Message(), "session_id")

	violations := fieldViolations(t, st)
	fields := make([]string, 0, len(violations))
	for _, v := range violations {
		fields = append(fields, v.GetField())
		assert.NotEmpty(t, v.GetDescription())
		assert.Equal(t, "STRING_MIN_LEN", v.GetReason())
	}
	slices.Sort(fields)
	assert.Equal(t, []string{"input.parts[1].text", "session_id"}, fields)

	_, err = h.echo(ctxWithKey(testKey), h.types.request("s1", "ok"))
	require.NoError(t, err)
}

func TestValidationEveryStreamMessage(t *testing.T) {
	h := start(t)
	stream, err := h.conn.NewStream(ctxWithKey(testKey), &grpc.StreamDesc{ClientStreams: true}, streamMethod)
	require.NoError(t, err)
	require.NoError(t, stream.SendMsg(h.types.request("s1", "ok")))
	_ = stream.SendMsg(h.types.request("s1", ""))
	_ = stream.CloseSend()
	st := requireCode(t, stream.RecvMsg(h.types.response()), codes.InvalidArgument)
	violations := fieldViolations(t, st)
	require.Len(t, violations, 1)
	assert.Equal(t, "input.parts[0].text", violations[0].GetField())
}

func fieldViolations(t *testing.T, st *status.Status) []*errdetails.BadRequest_FieldViolation {
	t.Helper()
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			return br.GetFieldViolations()
		}
	}
	t.Fatalf("no BadRequest detail in %v", st)
	return nil
}

func TestTracing(t *testing.T) {
	h := start(t)
	h.srv.MarkServing()
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := metadata.AppendToOutgoingContext(ctxWithKey(testKey), "traceparent", traceparent)
	_, err := h.echo(ctx, h.types.request("s1"))
	require.NoError(t, err)
	_, err = healthpb.NewHealthClient(h.conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)

	// The server span ends after the response is on the wire.
	var span tracetest.SpanStub
	require.Eventually(t, func() bool {
		for _, s := range h.spans.GetSpans() {
			if s.Name == "test.v1.Probe/Echo" {
				span = s
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, trace.SpanKindServer, span.SpanKind)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", span.SpanContext.TraceID().String(), "incoming W3C trace context is joined")
	assert.Equal(t, "00f067aa0ba902b7", span.Parent.SpanID().String())
	var tenant string
	for _, a := range span.Attributes {
		if a.Key == "agentruntime.tenant" {
			tenant = a.Value.AsString()
		}
	}
	assert.Equal(t, "acme", tenant)
	for _, s := range h.spans.GetSpans() {
		assert.NotContains(t, s.Name, "grpc.health.v1", "health probes are not traced")
	}

	rec := h.logs.find(t, func(r map[string]any) bool { return r["msg"] == "grpc call" && r["grpc.method"] == echoMethod })
	require.NotNil(t, rec)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", rec["trace_id"], "logs carry the trace id")
}

func TestRequestLogging(t *testing.T) {
	h := start(t)
	h.srv.MarkServing()
	_, err := h.echo(ctxWithKey(testKey), h.types.request("s1"))
	require.NoError(t, err)
	_, err = h.echo(context.Background(), h.types.request("s1"))
	require.Error(t, err)
	_, err = healthpb.NewHealthClient(h.conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)

	ok := h.logs.find(t, func(r map[string]any) bool { return r["grpc.method"] == echoMethod && r["grpc.code"] == "OK" })
	require.NotNil(t, ok)
	assert.Equal(t, "INFO", ok["level"])
	assert.Equal(t, "acme", ok["tenant"])
	assert.Contains(t, ok, "duration")

	denied := h.logs.find(t, func(r map[string]any) bool {
		return r["grpc.method"] == echoMethod && r["grpc.code"] == "Unauthenticated"
	})
	require.NotNil(t, denied)
	assert.NotContains(t, denied, "tenant")

	health := h.logs.find(t, func(r map[string]any) bool { return r["grpc.method"] == "/grpc.health.v1.Health/Check" })
	require.NotNil(t, health)
	assert.Equal(t, "DEBUG", health["level"])
}
