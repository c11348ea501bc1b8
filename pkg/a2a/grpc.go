package a2a

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/emptypb"
)

// GRPCService is the A2A gRPC binding's service (lf.a2a.v1.A2AService,
// the A2A Go SDK's generated protos) and its implementation, for
// server.Server.RegisterForeign. A call's messages are converted through
// their ProtoJSON form, which is what the JSON bindings speak: the same
// code serves all three (docs/adr/0015-a2a-by-hand.md).
func (h *Handler) GRPCService() (*grpc.ServiceDesc, any) {
	return &a2apb.A2AService_ServiceDesc, &grpcServer{h: h}
}

type grpcServer struct {
	a2apb.UnimplementedA2AServiceServer
	h *Handler
}

// grpcCredentials passes the caller's credentials on to the API calls, as
// withCredentials does for HTTP.
func grpcCredentials(ctx context.Context) (context.Context, func(string) string) {
	in, _ := metadata.FromIncomingContext(ctx)
	md := metadata.MD{}
	for _, k := range []string{"authorization", "traceparent", "tracestate"} {
		if v := in.Get(k); len(v) > 0 {
			md[k] = v
		}
	}
	header := func(k string) string {
		if v := in.Get(strings.ToLower(k)); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	return metadata.NewOutgoingContext(ctx, md), header
}

// fromPB reads a request into the JSON bindings' shape.
func fromPB(m proto.Message, v any) *rpcError {
	raw, err := protojson.Marshal(m)
	if err != nil {
		return &rpcError{Code: codeInternal, Message: err.Error()}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalidParams("request", "%v", err)
	}
	return nil
}

// toPB writes an answer of the JSON bindings' shape as its message.
func toPB(v any, m proto.Message) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(raw, m)
}

// grpcCodes are the gRPC code of each JSON-RPC error code.
var grpcCodes = map[int]codes.Code{
	codeTaskNotFound:        codes.NotFound,
	codeTaskNotCancelable:   codes.FailedPrecondition,
	codePushNotSupported:    codes.Unimplemented,
	codeUnsupported:         codes.FailedPrecondition,
	-32005:                  codes.InvalidArgument,
	codeExtendedCardMissing: codes.FailedPrecondition,
	codeVersionNotSupported: codes.FailedPrecondition,
	codeInvalidParams:       codes.InvalidArgument,
	codeInvalidRequest:      codes.InvalidArgument,
	codeParseError:          codes.InvalidArgument,
	codeMethodNotFound:      codes.Unimplemented,
}

// grpcError is e as a gRPC status, with A2A's reason in an ErrorInfo and
// the field in a BadRequest, as the HTTP+JSON binding says them.
func grpcError(e *rpcError) error {
	c, ok := grpcCodes[e.Code]
	if !ok {
		c = codes.Internal
	}
	switch e.status {
	case http.StatusUnauthorized:
		c = codes.Unauthenticated
	case http.StatusForbidden:
		c = codes.PermissionDenied
	}
	st := status.New(c, e.Message)
	var details []protoadapt.MessageV1
	if k, ok := restKinds[e.Code]; ok && k.reason != "" {
		meta := map[string]string{}
		for key, v := range e.Data {
			if s, ok := v.(string); ok {
				meta[key] = s
			}
		}
		details = append(details, &errdetails.ErrorInfo{Reason: k.reason, Domain: errorDomain, Metadata: meta})
	}
	if f, ok := e.Data["field"].(string); ok {
		details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: f, Description: e.Message}}})
	}
	if len(details) > 0 {
		if withDetails, err := st.WithDetails(details...); err == nil {
			st = withDetails
		}
	}
	return st.Err()
}

// accept is every call's start: the caller's credentials into ctx, the
// A2A version checked, the request in the JSON-RPC binding's shape.
func accept[P any](h *Handler, ctx context.Context, req proto.Message) (context.Context, func(string) string, *P, error) {
	ctx, header := grpcCredentials(ctx)
	if err := checkVersionOf(header); err != nil {
		return ctx, header, nil, grpcError(err)
	}
	if t, ok := req.(interface{ GetTenant() string }); ok {
		if err := h.checkTenant(ctx, "tenant", t.GetTenant()); err != nil {
			return ctx, header, nil, grpcError(err)
		}
	}
	p := new(P)
	if err := fromPB(req, p); err != nil {
		return ctx, header, nil, grpcError(err)
	}
	return ctx, header, p, nil
}

func (g *grpcServer) SendMessage(ctx context.Context, req *a2apb.SendMessageRequest) (*a2apb.SendMessageResponse, error) {
	ctx, _, p, aerr := accept[SendMessageRequest](g.h, ctx, req)
	if aerr != nil {
		return nil, aerr
	}
	task, err := g.h.sendMessage(ctx, p)
	if err != nil {
		return nil, grpcError(err)
	}
	out := &a2apb.SendMessageResponse{}
	if err := toPB(map[string]any{"task": task}, out); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return out, nil
}

func (g *grpcServer) GetTask(ctx context.Context, req *a2apb.GetTaskRequest) (*a2apb.Task, error) {
	ctx, _, p, aerr := accept[TaskIDRequest](g.h, ctx, req)
	if aerr != nil {
		return nil, aerr
	}
	task, err := g.h.getTask(ctx, p)
	return g.task(task, err)
}

func (g *grpcServer) CancelTask(ctx context.Context, req *a2apb.CancelTaskRequest) (*a2apb.Task, error) {
	ctx, _, p, aerr := accept[TaskIDRequest](g.h, ctx, req)
	if aerr != nil {
		return nil, aerr
	}
	task, err := g.h.cancelTask(ctx, p)
	return g.task(task, err)
}

func (g *grpcServer) task(task *Task, err *rpcError) (*a2apb.Task, error) {
	if err != nil {
		return nil, grpcError(err)
	}
	out := &a2apb.Task{}
	if err := toPB(task, out); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return out, nil
}

func (g *grpcServer) ListTasks(ctx context.Context, req *a2apb.ListTasksRequest) (*a2apb.ListTasksResponse, error) {
	ctx, _, p, aerr := accept[ListTasksRequest](g.h, ctx, req)
	if aerr != nil {
		return nil, aerr
	}
	res, err := g.h.listTasks(ctx, p)
	if err != nil {
		return nil, grpcError(err)
	}
	out := &a2apb.ListTasksResponse{}
	if err := toPB(res, out); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return out, nil
}

func (g *grpcServer) SendStreamingMessage(req *a2apb.SendMessageRequest, stream grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	ctx, _, p, aerr := accept[SendMessageRequest](g.h, stream.Context(), req)
	if aerr != nil {
		return aerr
	}
	out := &grpcSink{stream: stream}
	g.h.sendStreaming(ctx, out, p)
	return out.err
}

func (g *grpcServer) SubscribeToTask(req *a2apb.SubscribeToTaskRequest, stream grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	ctx, header, p, aerr := accept[TaskIDRequest](g.h, stream.Context(), req)
	if aerr != nil {
		return aerr
	}
	out := &grpcSink{stream: stream}
	g.h.subscribe(ctx, out, header, p)
	return out.err
}

func (g *grpcServer) CreateTaskPushNotificationConfig(ctx context.Context, req *a2apb.TaskPushNotificationConfig) (*a2apb.TaskPushNotificationConfig, error) {
	ctx, _, p, aerr := accept[TaskPushNotificationConfig](g.h, ctx, req)
	if aerr != nil {
		return nil, aerr
	}
	c, err := g.h.createPushConfig(ctx, "params", p)
	return g.pushConfig(c, err)
}

func (g *grpcServer) GetTaskPushNotificationConfig(ctx context.Context, req *a2apb.GetTaskPushNotificationConfigRequest) (*a2apb.TaskPushNotificationConfig, error) {
	ctx, _, p, aerr := accept[PushConfigRequest](g.h, ctx, req)
	if aerr != nil {
		return nil, aerr
	}
	c, err := g.h.getPushConfig(ctx, p)
	return g.pushConfig(c, err)
}

func (g *grpcServer) pushConfig(c *TaskPushNotificationConfig, err *rpcError) (*a2apb.TaskPushNotificationConfig, error) {
	if err != nil {
		return nil, grpcError(err)
	}
	out := &a2apb.TaskPushNotificationConfig{}
	if err := toPB(c, out); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return out, nil
}

func (g *grpcServer) ListTaskPushNotificationConfigs(ctx context.Context, req *a2apb.ListTaskPushNotificationConfigsRequest) (*a2apb.ListTaskPushNotificationConfigsResponse, error) {
	ctx, _, p, aerr := accept[ListPushConfigsRequest](g.h, ctx, req)
	if aerr != nil {
		return nil, aerr
	}
	res, err := g.h.listPushConfigs(ctx, p)
	if err != nil {
		return nil, grpcError(err)
	}
	out := &a2apb.ListTaskPushNotificationConfigsResponse{}
	if err := toPB(res, out); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return out, nil
}

func (g *grpcServer) DeleteTaskPushNotificationConfig(ctx context.Context, req *a2apb.DeleteTaskPushNotificationConfigRequest) (*emptypb.Empty, error) {
	ctx, _, p, aerr := accept[PushConfigRequest](g.h, ctx, req)
	if aerr != nil {
		return nil, aerr
	}
	if err := g.h.deletePushConfig(ctx, p); err != nil {
		return nil, grpcError(err)
	}
	return &emptypb.Empty{}, nil
}

// grpcSink sends a stream's items as StreamResponse messages; the cursor
// is in each item's metadata (gRPC has no event id).
type grpcSink struct {
	stream grpc.ServerStreamingServer[a2apb.StreamResponse]
	err    error
}

func (s *grpcSink) send(item StreamResponse, _ string) error {
	m := &a2apb.StreamResponse{}
	if err := toPB(item, m); err != nil {
		return err
	}
	return s.stream.Send(m)
}

// keepalive sends nothing: HTTP/2 keeps the connection.
func (s *grpcSink) keepalive() error { return nil }

func (s *grpcSink) fail(e *rpcError) { s.err = grpcError(e) }
