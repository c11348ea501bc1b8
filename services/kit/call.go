package kit

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/grpcerr"
)

// Call is the one shape of a unary handler: the caller from the
// credentials (the server kit authenticated them and validated the
// request), the use case, and its error as the status a client sees. A
// handler with nothing to translate is one line:
//
//	return kit.Call(ctx, req, h.app.GetSession)
//
// A handler that translates proto to domain types does it inside use.
func Call[Req, Resp any](ctx context.Context, req Req, use func(context.Context, auth.Principal, Req) (Resp, error)) (Resp, error) {
	var zero Resp
	p, err := Principal(ctx)
	if err != nil {
		return zero, err
	}
	resp, err := use(ctx, p, req)
	if err != nil {
		return zero, Status(ctx, err)
	}
	return resp, nil
}

// Principal is the authenticated caller; the tenant always comes from the
// credentials, never from the request.
func Principal(ctx context.Context) (auth.Principal, error) {
	p, ok := auth.FromContext(ctx)
	if !ok || p.Tenant == "" {
		return auth.Principal{}, grpcerr.Status(fault.Unauthenticated("no credentials"))
	}
	return p, nil
}

// Status is grpcerr.Status for a handler: a failure that is not the
// caller's (a dependency, a bug) keeps its cause on the call's span, which
// the caller never sees.
func Status(ctx context.Context, err error) error {
	st := grpcerr.Status(err)
	if c := status.Code(st); c == codes.Unavailable || c == codes.Internal {
		trace.SpanFromContext(ctx).RecordError(err)
	}
	return st
}

// TenantOnly adapts a use case that needs only the caller's tenant to Call:
//
//	return kit.Call(ctx, req, kit.TenantOnly(h.app.EstimateCost))
func TenantOnly[Req, Resp any](use func(context.Context, string, Req) (Resp, error)) func(context.Context, auth.Principal, Req) (Resp, error) {
	return func(ctx context.Context, p auth.Principal, req Req) (Resp, error) { return use(ctx, p.Tenant, req) }
}
