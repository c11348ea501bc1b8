// Package hookcall delivers hook inputs to the handlers hosts register: a
// gRPC HookHandler service or an HTTP endpoint taking and returning the
// JSON form of the same messages.
package hookcall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/telemetry"
	"github.com/agentruntime/agentruntime/services/permission/app"
)

// maxHTTPResponse bounds what an HTTP hook may answer.
const maxHTTPResponse = 4 << 20

// Caller implements app.HookCaller. It keeps one gRPC connection per
// target (connections multiplex calls and reconnect by themselves).
type Caller struct {
	HTTP *http.Client
	// DialOptions for gRPC targets; plaintext when empty (hooks run next
	// to the runtime, inside the cluster's network policy).
	DialOptions []grpc.DialOption
	// TracerProvider records a client span per hook call and carries the
	// trace to the hook (gRPC metadata or HTTP headers, W3C traceparent),
	// so a hook's own spans join the turn's trace. Nil records none.
	TracerProvider trace.TracerProvider

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

// New returns a Caller with default clients. Its HTTP client follows no
// redirect: a hook's host was checked when it was registered
// (domain.HookHosts), and a redirect would send the call to a host nobody
// checked. A redirect is the hook's failure (HTTP 3xx).
func New() *Caller {
	return &Caller{HTTP: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var _ app.HookCaller = (*Caller)(nil)

// Call implements app.HookCaller.
func (c *Caller) Call(ctx context.Context, hook *eventsv1.Hook, in *permissionv1.HandleHookRequest) (resp *permissionv1.HandleHookResponse, err error) {
	if c.TracerProvider != nil {
		var span trace.Span
		ctx, span = c.TracerProvider.Tracer("github.com/agentruntime/agentruntime/services/permission/adapters/hookcall").Start(ctx,
			"agentruntime.hook", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("agentruntime.hook_id", hook.GetHookId()), attribute.String("agentruntime.hook_point", in.GetPoint().String()), attribute.String("agentruntime.hook_run_id", in.GetHookRunId())))
		defer func() {
			if err != nil {
				span.SetStatus(otelcodes.Error, err.Error())
			}
			span.End()
		}()
	}
	switch h := hook.GetHandler().(type) {
	case *eventsv1.Hook_GrpcTarget:
		conn, err := c.conn(h.GrpcTarget)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", app.ErrHookUnavailable, err)
		}
		return permissionv1.NewHookHandlerClient(conn).HandleHook(ctx, in)
	case *eventsv1.Hook_HttpUrl:
		return c.callHTTP(ctx, h.HttpUrl, in)
	}
	return nil, errors.New("hook has no handler")
}

func (c *Caller) conn(target string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn, ok := c.conns[target]; ok {
		return conn, nil
	}
	opts := c.DialOptions
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	if c.TracerProvider != nil {
		// The hook span above is the parent; the handler only carries it.
		opts = append(slices.Clone(opts), grpc.WithStatsHandler(otelgrpc.NewClientHandler(
			otelgrpc.WithTracerProvider(tracenoop.NewTracerProvider()), otelgrpc.WithPropagators(telemetry.Propagator()))))
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, err
	}
	if c.conns == nil {
		c.conns = map[string]*grpc.ClientConn{}
	}
	c.conns[target] = conn
	return conn, nil
}

func (c *Caller) callHTTP(ctx context.Context, url string, in *permissionv1.HandleHookRequest) (*permissionv1.HandleHookResponse, error) {
	body, err := protojson.Marshal(in)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	telemetry.Propagator().Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var netErr *net.OpError
		if errors.As(err, &netErr) {
			return nil, fmt.Errorf("%w: %v", app.ErrHookUnavailable, err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPResponse+1))
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout:
		return nil, fmt.Errorf("%w: HTTP %d", app.ErrHookUnavailable, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("hook answered HTTP %d", resp.StatusCode)
	case len(data) > maxHTTPResponse:
		return nil, fmt.Errorf("hook answer larger than %d bytes", maxHTTPResponse)
	}
	out := &permissionv1.HandleHookResponse{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("%w: %v", app.ErrInvalidHookOutput, err)
	}
	return out, nil
}

// Close closes the gRPC connections.
func (c *Caller) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, conn := range c.conns {
		errs = append(errs, conn.Close())
	}
	c.conns = nil
	return errors.Join(errs...)
}
