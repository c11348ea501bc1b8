package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"buf.build/go/protovalidate"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/grpcerr"
	"github.com/agentruntime/agentruntime/pkg/quota"
)

const (
	healthPrefix     = "/grpc.health.v1.Health/"
	reflectionPrefix = "/grpc.reflection."
)

// errInternal is all a caller learns about a panic; the details go to the log.
var errInternal = grpcerr.Status(fault.Internal("internal error"))

// exemptFromAuth lists the methods that must work without credentials:
// Kubernetes probes call health, and grpcurl lists services via reflection.
func exemptFromAuth(fullMethod string) bool {
	return strings.HasPrefix(fullMethod, healthPrefix) || strings.HasPrefix(fullMethod, reflectionPrefix)
}

// callState carries what inner interceptors learn back to the outer ones:
// authentication runs inside logging and recovery, yet their log lines
// should name the tenant. All access is on the call's own goroutine.
type callState struct {
	principal     auth.Principal
	authenticated bool
}

type callStateKey struct{}

func withCallState(ctx context.Context) (context.Context, *callState) {
	if st, ok := ctx.Value(callStateKey{}).(*callState); ok {
		return ctx, st
	}
	st := &callState{}
	return context.WithValue(ctx, callStateKey{}, st), st
}

func (st *callState) attrs() []any {
	if !st.authenticated {
		return nil
	}
	return []any{"tenant", st.principal.Tenant, "subject", st.principal.Subject}
}

// --- recovery -------------------------------------------------------------

func (s *Server) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	ctx, st := withCallState(ctx)
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			s.logPanic(ctx, info.FullMethod, st, start, r)
			resp, err = nil, errInternal
		}
	}()
	return handler(ctx, req)
}

func (s *Server) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	ctx, st := withCallState(ss.Context())
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			s.logPanic(ctx, info.FullMethod, st, start, r)
			err = errInternal
		}
	}()
	return handler(srv, &wrappedStream{ServerStream: ss, ctx: ctx})
}

// logPanic is the only log line of a panicking call: the request log below
// it never sees the call end.
func (s *Server) logPanic(ctx context.Context, method string, st *callState, start time.Time, r any) {
	attrs := []any{
		"grpc.method", method,
		"grpc.code", codes.Internal.String(),
		"duration", time.Since(start),
		"panic", fmt.Sprint(r),
		"stack", string(debug.Stack()),
	}
	attrs = append(attrs, st.attrs()...)
	attrs = append(attrs, traceAttrs(ctx)...)
	s.log.ErrorContext(ctx, "grpc handler panicked", attrs...)
}

// --- request logging ------------------------------------------------------

func (s *Server) logUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, st := withCallState(ctx)
	start := time.Now()
	resp, err := handler(ctx, req)
	s.logCall(ctx, info.FullMethod, st, start, err)
	return resp, err
}

func (s *Server) logStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, st := withCallState(ss.Context())
	start := time.Now()
	err := handler(srv, &wrappedStream{ServerStream: ss, ctx: ctx})
	s.logCall(ctx, info.FullMethod, st, start, err)
	return err
}

func (s *Server) logCall(ctx context.Context, method string, st *callState, start time.Time, err error) {
	code := status.Code(err)
	level := levelFor(code)
	// Probes and grpcurl's reflection calls are constant background noise.
	if strings.HasPrefix(method, healthPrefix) || strings.HasPrefix(method, reflectionPrefix) {
		level = slog.LevelDebug
	}
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := []any{
		"grpc.method", method,
		"grpc.code", code.String(),
		"duration", time.Since(start),
	}
	attrs = append(attrs, st.attrs()...)
	if err != nil {
		attrs = append(attrs, "error", status.Convert(err).Message())
	}
	attrs = append(attrs, traceAttrs(ctx)...)
	s.log.Log(ctx, level, "grpc call", attrs...)
}

// levelFor puts failures the server must look at above the caller's own
// mistakes, which are routine and stay at info.
func levelFor(code codes.Code) slog.Level {
	switch code {
	case codes.Internal, codes.Unknown, codes.DataLoss:
		return slog.LevelError
	// Unimplemented: a method not built yet, or a client newer than us.
	case codes.DeadlineExceeded, codes.Unavailable, codes.Aborted, codes.ResourceExhausted, codes.Unimplemented:
		return slog.LevelWarn
	default:
		return slog.LevelInfo
	}
}

func traceAttrs(ctx context.Context) []any {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	return []any{"trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String()}
}

// --- authentication -------------------------------------------------------

func (s *Server) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if exemptFromAuth(info.FullMethod) {
		return handler(ctx, req)
	}
	ctx, err := s.authenticate(ctx)
	if err != nil {
		return nil, err
	}
	// A caller's command: what it appends is charged to its tenant's
	// quota (pkg/quota). Streams append only their own channel facts and
	// are not charged.
	return handler(quota.AtDoor(ctx, s.cfg.Quota), req)
}

func (s *Server) authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if exemptFromAuth(info.FullMethod) {
		return handler(srv, ss)
	}
	ctx, err := s.authenticate(ss.Context())
	if err != nil {
		return err
	}
	// Each tenant holds a bounded number of streams open (pkg/quota).
	if s.cfg.Quota != nil {
		p, _ := auth.FromContext(ctx)
		release, err := s.cfg.Quota.OpenStream(ctx, p.Tenant)
		if err != nil {
			return grpcerr.Status(err)
		}
		defer release()
	}
	return handler(srv, &wrappedStream{ServerStream: ss, ctx: ctx})
}

func (s *Server) authenticate(ctx context.Context) (context.Context, error) {
	p, err := s.authn.Authenticate(ctx)
	if err != nil {
		// An authenticator that returns a plain error still means "not
		// authenticated"; its text may be internal, so it is only logged.
		if _, ok := status.FromError(err); !ok {
			s.log.WarnContext(ctx, "authenticator returned a non-status error", "error", err)
			return ctx, grpcerr.Status(fault.Unauthenticated("authentication failed"))
		}
		return ctx, err
	}
	_, st := withCallState(ctx)
	st.principal, st.authenticated = p, true
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("agentruntime.tenant", p.Tenant))
	return auth.NewContext(ctx, p), nil
}

// --- validation -----------------------------------------------------------

func (s *Server) validateUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.validate(ctx, req); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (s *Server) validateStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, &validatingStream{ServerStream: ss, s: s})
}

func (s *Server) validate(ctx context.Context, req any) error {
	msg, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	err := s.validator.Validate(msg)
	if err == nil {
		return nil
	}
	if verr, ok := errors.AsType[*protovalidate.ValidationError](err); ok {
		return ValidationStatus(verr).Err()
	}
	// A rule that does not compile or fails at runtime is a bug in our
	// protos, not the caller's mistake; the caller is told no more than that.
	s.log.ErrorContext(ctx, "request validation could not run", "error", err, "message", string(msg.ProtoReflect().Descriptor().FullName()))
	return errInternal
}

// validatingStream validates every message a client sends, so a client
// stream cannot slip an invalid message in after a valid first one.
type validatingStream struct {
	grpc.ServerStream
	s *Server
}

func (w *validatingStream) RecvMsg(m any) error {
	if err := w.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return w.s.validate(w.Context(), m)
}

// wrappedStream replaces a stream's context, the only way a stream
// interceptor can hand values to the handler.
type wrappedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (w *wrappedStream) Context() context.Context { return w.ctx }
