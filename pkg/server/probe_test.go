package server_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/agentruntime/agentruntime/pkg/auth"
	authv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/auth/v1"
)

// The probe service is built from a descriptor at test time, so the kit is
// tested against buf.validate rules (nested and repeated fields included)
// without depending on the project's generated code.
const (
	probeService = "test.v1.Probe"
	echoMethod   = "/test.v1.Probe/Echo"
	blockMethod  = "/test.v1.Probe/Block"
	streamMethod = "/test.v1.Probe/Collect"
)

type probeTypes struct {
	req, input, part, resp protoreflect.MessageDescriptor
	// files holds the probe's file, with its service's role declarations.
	files *protoregistry.Files
}

// viewerMethod declares that any viewer may call a probe method.
func viewerMethod(name string, clientStreams bool) *descriptorpb.MethodDescriptorProto {
	opts := &descriptorpb.MethodOptions{}
	proto.SetExtension(opts, authv1.E_Access, &authv1.Access{MinRole: authv1.Role_ROLE_VIEWER})
	m := &descriptorpb.MethodDescriptorProto{
		Name: proto.String(name), InputType: proto.String(".test.v1.EchoRequest"), OutputType: proto.String(".test.v1.EchoResponse"),
		Options: opts,
	}
	if clientStreams {
		m.ClientStreaming = proto.Bool(true)
	}
	return m
}

func stringRules(minLen uint64) *descriptorpb.FieldOptions {
	opts := &descriptorpb.FieldOptions{}
	proto.SetExtension(opts, validate.E_Field, validate.FieldRules_builder{
		String: validate.StringRules_builder{MinLen: proto.Uint64(minLen)}.Build(),
	}.Build())
	return opts
}

func field(name string, number int32, typ descriptorpb.FieldDescriptorProto_Type, typeName string, opts *descriptorpb.FieldOptions) *descriptorpb.FieldDescriptorProto {
	f := &descriptorpb.FieldDescriptorProto{
		Name:     proto.String(name),
		JsonName: proto.String(name),
		Number:   proto.Int32(number),
		Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		Type:     typ.Enum(),
		Options:  opts,
	}
	if typeName != "" {
		f.TypeName = proto.String(typeName)
	}
	return f
}

func newProbeTypes(t *testing.T) probeTypes {
	t.Helper()
	str := descriptorpb.FieldDescriptorProto_TYPE_STRING
	msg := descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	parts := field("parts", 1, msg, ".test.v1.Part", nil)
	parts.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("test/v1/probe.proto"),
		Package: proto.String("test.v1"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("EchoRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				field("session_id", 1, str, "", stringRules(1)),
				field("input", 2, msg, ".test.v1.Input", nil),
				field("panic", 3, descriptorpb.FieldDescriptorProto_TYPE_BOOL, "", nil),
			}},
			{Name: proto.String("Input"), Field: []*descriptorpb.FieldDescriptorProto{parts}},
			{Name: proto.String("Part"), Field: []*descriptorpb.FieldDescriptorProto{
				field("text", 1, str, "", stringRules(1)),
			}},
			{Name: proto.String("EchoResponse"), Field: []*descriptorpb.FieldDescriptorProto{
				field("tenant", 1, str, "", nil),
				field("subject", 2, str, "", nil),
				field("count", 3, descriptorpb.FieldDescriptorProto_TYPE_INT32, "", nil),
			}},
		},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name:   proto.String("Probe"),
			Method: []*descriptorpb.MethodDescriptorProto{viewerMethod("Echo", false), viewerMethod("Block", false), viewerMethod("Collect", true)},
		}},
	}
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	require.NoError(t, err)
	files := &protoregistry.Files{}
	require.NoError(t, files.RegisterFile(fd))
	m := fd.Messages()
	return probeTypes{req: m.ByName("EchoRequest"), input: m.ByName("Input"), part: m.ByName("Part"), resp: m.ByName("EchoResponse"), files: files}
}

func (p probeTypes) request(sessionID string, texts ...string) *dynamicpb.Message {
	req := dynamicpb.NewMessage(p.req)
	req.Set(p.req.Fields().ByName("session_id"), protoreflect.ValueOfString(sessionID))
	if len(texts) > 0 {
		input := dynamicpb.NewMessage(p.input)
		list := input.Mutable(p.input.Fields().ByName("parts")).List()
		for _, text := range texts {
			part := dynamicpb.NewMessage(p.part)
			part.Set(p.part.Fields().ByName("text"), protoreflect.ValueOfString(text))
			list.Append(protoreflect.ValueOfMessage(part))
		}
		req.Set(p.req.Fields().ByName("input"), protoreflect.ValueOfMessage(input))
	}
	return req
}

func (p probeTypes) panicking() *dynamicpb.Message {
	req := p.request("s1")
	req.Set(p.req.Fields().ByName("panic"), protoreflect.ValueOfBool(true))
	return req
}

func (p probeTypes) response() *dynamicpb.Message { return dynamicpb.NewMessage(p.resp) }

func (p probeTypes) str(m *dynamicpb.Message, name string) string {
	return m.Get(m.Descriptor().Fields().ByName(protoreflect.Name(name))).String()
}

// probe implements the service. Block signals entered and waits for release
// so tests can hold a call in flight across shutdown.
type probe struct {
	types   probeTypes
	entered chan struct{}
	release chan struct{}
}

func newProbe(types probeTypes) *probe {
	return &probe{types: types, entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (p *probe) answer(ctx context.Context, count int32) *dynamicpb.Message {
	resp := p.types.response()
	if pr, ok := auth.FromContext(ctx); ok {
		resp.Set(p.types.resp.Fields().ByName("tenant"), protoreflect.ValueOfString(pr.Tenant))
		resp.Set(p.types.resp.Fields().ByName("subject"), protoreflect.ValueOfString(pr.Subject))
	}
	resp.Set(p.types.resp.Fields().ByName("count"), protoreflect.ValueOfInt32(count))
	return resp
}

func (p *probe) echo(ctx context.Context, req *dynamicpb.Message) (*dynamicpb.Message, error) {
	if req.Get(p.types.req.Fields().ByName("panic")).Bool() {
		panic("probe asked to panic")
	}
	return p.answer(ctx, 1), nil
}

func (p *probe) block(ctx context.Context, _ *dynamicpb.Message) (*dynamicpb.Message, error) {
	p.entered <- struct{}{}
	<-p.release
	return p.answer(ctx, 1), nil
}

func (p *probe) collect(stream grpc.ServerStream) error {
	var n int32
	for {
		req := dynamicpb.NewMessage(p.types.req)
		err := stream.RecvMsg(req)
		if errors.Is(err, io.EOF) {
			return stream.SendMsg(p.answer(stream.Context(), n))
		}
		if err != nil {
			return err
		}
		if req.Get(p.types.req.Fields().ByName("panic")).Bool() {
			panic("probe stream asked to panic")
		}
		n++
	}
}

func (p *probe) unary(name string, fn func(context.Context, *dynamicpb.Message) (*dynamicpb.Message, error)) grpc.MethodDesc {
	full := "/" + probeService + "/" + name
	return grpc.MethodDesc{
		MethodName: name,
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := dynamicpb.NewMessage(p.types.req)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, req any) (any, error) { return fn(ctx, req.(*dynamicpb.Message)) }
			if interceptor == nil {
				return h(ctx, in)
			}
			return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: full}, h)
		},
	}
}

func (p *probe) register(s grpc.ServiceRegistrar) {
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: probeService,
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{p.unary("Echo", p.echo), p.unary("Block", p.block)},
		Streams: []grpc.StreamDesc{{
			StreamName:    "Collect",
			ClientStreams: true,
			Handler:       func(_ any, stream grpc.ServerStream) error { return p.collect(stream) },
		}},
	}, struct{}{})
}
