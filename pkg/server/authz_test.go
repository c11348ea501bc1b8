package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/agentruntime/agentruntime/pkg/auth"
	authv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/auth/v1"
	_ "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	_ "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	_ "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	_ "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	_ "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/grpcerr"
	"github.com/agentruntime/agentruntime/pkg/server"
)

// agentruntimeServices are the service descriptors of every agentruntime
// proto linked into this test (every generated package is imported above).
func agentruntimeServices(t *testing.T) []protoreflect.ServiceDescriptor {
	t.Helper()
	var out []protoreflect.ServiceDescriptor
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if strings.HasPrefix(string(fd.Package()), "agentruntime.") {
			for i := range fd.Services().Len() {
				out = append(out, fd.Services().Get(i))
			}
		}
		return true
	})
	require.GreaterOrEqual(t, len(out), 6, "the generated agentruntime services are not linked in")
	return out
}

func TestEveryMethodDeclaresARole(t *testing.T) {
	n := 0
	for _, sd := range agentruntimeServices(t) {
		for i := range sd.Methods().Len() {
			m := sd.Methods().Get(i)
			n++
			if _, ok := auth.AccessOf(m); !ok {
				t.Errorf("%s declares no role: add option (agentruntime.auth.v1.access) = {min_role: ...} to the rpc", m.FullName())
			}
		}
	}
	t.Logf("%d methods declare their role", n)
}

// unimplemented registers sd on s with handlers that answer Unimplemented:
// a call that reaches one passed authentication and authorization.
func unimplemented(s *grpc.Server, sd protoreflect.ServiceDescriptor) {
	s.RegisterService(unimplementedDesc(sd), struct{}{})
}

// unimplementedDesc is unimplemented's service description.
func unimplementedDesc(sd protoreflect.ServiceDescriptor) *grpc.ServiceDesc {
	desc := &grpc.ServiceDesc{ServiceName: string(sd.FullName()), HandlerType: (*any)(nil)}
	for i := range sd.Methods().Len() {
		m := sd.Methods().Get(i)
		full := fmt.Sprintf("/%s/%s", sd.FullName(), m.Name())
		if m.IsStreamingClient() || m.IsStreamingServer() {
			desc.Streams = append(desc.Streams, grpc.StreamDesc{
				StreamName: string(m.Name()), ServerStreams: m.IsStreamingServer(), ClientStreams: m.IsStreamingClient(),
				Handler: func(any, grpc.ServerStream) error { return status.Error(codes.Unimplemented, "reached "+full) },
			})
			continue
		}
		in := m.Input()
		desc.Methods = append(desc.Methods, grpc.MethodDesc{
			MethodName: string(m.Name()),
			Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
				req := dynamicpb.NewMessage(in)
				if err := dec(req); err != nil {
					return nil, err
				}
				h := func(context.Context, any) (any, error) {
					return nil, status.Error(codes.Unimplemented, "reached "+full)
				}
				return interceptor(ctx, req, &grpc.UnaryServerInfo{Server: srv, FullMethod: full}, h)
			},
		})
	}
	return desc
}

// admits is what each declared least role means, written out here apart
// from pkg/auth so the table below checks it rather than repeats it.
var admits = map[authv1.Role][]string{
	authv1.Role_ROLE_VIEWER:   {auth.RoleViewer, auth.RoleOperator, auth.RoleAdmin},
	authv1.Role_ROLE_OPERATOR: {auth.RoleOperator, auth.RoleAdmin},
	authv1.Role_ROLE_WORKER:   {auth.RoleWorker, auth.RoleAdmin},
	authv1.Role_ROLE_ADMIN:    {auth.RoleAdmin},
}

func expectAllowed(a *authv1.Access, role string) bool {
	if a.GetAlsoWorker() && role == auth.RoleWorker {
		return true
	}
	for _, r := range admits[a.GetMinRole()] {
		if r == role {
			return true
		}
	}
	return false
}

const jwtSecret = "0123456789abcdef0123456789abcdef"

// startAuthzServer serves every agentruntime service (unimplemented) on a
// loopback TCP port behind the kit, with an API key per role and HS256
// JWTs.
func startAuthzServer(t *testing.T) *grpc.ClientConn {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hs256.key"), []byte(jwtSecret), 0o600))
	var keys strings.Builder
	for _, r := range auth.Roles {
		sum := sha256.Sum256([]byte("key-" + r))
		fmt.Fprintf(&keys, "  - {name: %s-bot, tenant: acme, role: %s, key_sha256: %s}\n", r, r, hex.EncodeToString(sum[:]))
	}
	path := filepath.Join(dir, "auth.yaml")
	require.NoError(t, os.WriteFile(path, []byte("api_keys:\n"+keys.String()+"jwt:\n  hs256_secret_file: hs256.key\n"), 0o600))
	cfg, err := auth.LoadConfig(path)
	require.NoError(t, err)
	authn, err := auth.New(cfg)
	require.NoError(t, err)

	srv, err := server.New(server.Config{Authenticator: authn, ShutdownTimeout: time.Second})
	require.NoError(t, err)
	for _, sd := range agentruntimeServices(t) {
		unimplemented(srv.GRPC(), sd)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		assert.NoError(t, <-served)
	})
	return conn
}

func signRole(t *testing.T, role string) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": role + "-user", "tenant": "acme", "role": role, "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(jwtSecret))
	require.NoError(t, err)
	return tok
}

// call invokes m with an empty request and returns the call's error.
func call(ctx context.Context, conn *grpc.ClientConn, m protoreflect.MethodDescriptor) error {
	full := fmt.Sprintf("/%s/%s", m.Parent().FullName(), m.Name())
	req, resp := dynamicpb.NewMessage(m.Input()), dynamicpb.NewMessage(m.Output())
	if !m.IsStreamingClient() && !m.IsStreamingServer() {
		return conn.Invoke(ctx, full, req, resp)
	}
	st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: m.IsStreamingServer(), ClientStreams: m.IsStreamingClient()}, full)
	if err != nil {
		return err
	}
	_ = st.SendMsg(req) // an early refusal surfaces on RecvMsg
	_ = st.CloseSend()
	return st.RecvMsg(resp)
}

// TestRoleMatrix calls every method of every agentruntime service as every
// role, with an API key and with a JWT carrying the role claim, through
// gRPC on a TCP port: allowed calls pass authorization (they reach the
// handler, or its request validation), the others are PermissionDenied
// with an ErrorInfo naming the role needed and the role held.
func TestRoleMatrix(t *testing.T) {
	conn := startAuthzServer(t)
	creds := map[string]map[string]string{}
	for _, r := range auth.Roles {
		creds[r] = map[string]string{"api key": "key-" + r, "jwt": signRole(t, r)}
	}
	calls, denials := 0, 0
	for _, sd := range agentruntimeServices(t) {
		for i := range sd.Methods().Len() {
			m := sd.Methods().Get(i)
			a, ok := auth.AccessOf(m)
			require.True(t, ok, "%s declares no role", m.FullName())
			for _, role := range auth.Roles {
				for kind, token := range creds[role] {
					ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token), 10*time.Second)
					err := call(ctx, conn, m)
					cancel()
					calls++
					st := status.Convert(err)
					name := fmt.Sprintf("%s as %s (%s)", m.FullName(), role, kind)
					if expectAllowed(a, role) {
						if st.Code() != codes.Unimplemented && st.Code() != codes.InvalidArgument {
							t.Errorf("%s: got %v, want it to pass authorization (Unimplemented or InvalidArgument)", name, st)
						}
						continue
					}
					denials++
					if st.Code() != codes.PermissionDenied {
						t.Errorf("%s: got %v, want PermissionDenied", name, st)
						continue
					}
					info := errorInfo(st)
					if info == nil {
						t.Errorf("%s: PermissionDenied without ErrorInfo", name)
						continue
					}
					md := info.GetMetadata()
					if info.GetReason() != server.ReasonRoleNotPermitted || info.GetDomain() != grpcerr.Domain ||
						md["held_role"] != role || !strings.HasPrefix(md["required_role"], auth.RoleName(a.GetMinRole())) {
						t.Errorf("%s: ErrorInfo %v, want reason %s, held_role %s, required_role %s", name, info, server.ReasonRoleNotPermitted, role, auth.Describe(a))
					}
				}
			}
		}
	}
	t.Logf("%d calls, %d denied", calls, denials)
}

func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

func TestDenialNamesNeededAndHeldRoles(t *testing.T) {
	conn := startAuthzServer(t)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer key-worker")
	md, err := protoregistry.GlobalFiles.FindDescriptorByName("agentruntime.permission.v1.PermissionService.SetPermissionMode")
	require.NoError(t, err)
	st := status.Convert(call(ctx, conn, md.(protoreflect.MethodDescriptor)))
	require.Equal(t, codes.PermissionDenied, st.Code())
	assert.Equal(t, "agentruntime.permission.v1.PermissionService/SetPermissionMode needs role admin; the caller holds worker", st.Message())
	info := errorInfo(st)
	require.NotNil(t, info)
	assert.Equal(t, map[string]string{
		"method": "/agentruntime.permission.v1.PermissionService/SetPermissionMode", "required_role": "admin",
		"allowed_roles": "admin", "held_role": "worker",
	}, info.GetMetadata())
}

// The no-self-approval rule compares the subject that asked with the one
// that answers, so a JWT without a subject, which would make every such
// caller the same nobody, is refused before any role is considered.
func TestAJWTWithoutASubjectIsUnauthenticated(t *testing.T) {
	conn := startAuthzServer(t)
	md, err := protoregistry.GlobalFiles.FindDescriptorByName("agentruntime.control.v1.ControlService.RespondAction")
	require.NoError(t, err)
	for name, sub := range map[string]any{"no sub": nil, "empty sub": ""} {
		claims := jwt.MapClaims{"tenant": "acme", "role": "operator", "exp": time.Now().Add(time.Hour).Unix()}
		if sub != nil {
			claims["sub"] = sub
		}
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(jwtSecret))
		require.NoError(t, err)
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
		st := status.Convert(call(ctx, conn, md.(protoreflect.MethodDescriptor)))
		assert.Equal(t, codes.Unauthenticated, st.Code(), name)
		assert.Contains(t, st.Message(), `"sub"`, name)
	}
	// The same token with a subject passes authentication and authorization.
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+signRole(t, "operator"))
	st := status.Convert(call(ctx, conn, md.(protoreflect.MethodDescriptor)))
	assert.NotContains(t, []codes.Code{codes.Unauthenticated, codes.PermissionDenied}, st.Code(), st.Message())
}

// A method without a declaration could be called by nobody or, worse, by
// anybody: the server does not start with one.
func TestServeRefusesAMethodWithoutARole(t *testing.T) {
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String("undeclared/v1/undeclared.proto"), Package: proto.String("undeclared.v1"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("Empty")}},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Open"), Method: []*descriptorpb.MethodDescriptorProto{{
			Name: proto.String("Anything"), InputType: proto.String(".undeclared.v1.Empty"), OutputType: proto.String(".undeclared.v1.Empty"),
		}}}},
	}, protoregistry.GlobalFiles)
	require.NoError(t, err)
	files := &protoregistry.Files{}
	require.NoError(t, files.RegisterFile(fd))
	authn, err := auth.New(&auth.Config{APIKeys: []auth.APIKeyConfig{{Name: "a", Tenant: "acme", Role: auth.RoleAdmin, Key: "k-admin"}}})
	require.NoError(t, err)
	srv, err := server.New(server.Config{Authenticator: authn, Descriptors: files})
	require.NoError(t, err)
	unimplemented(srv.GRPC(), fd.Services().Get(0))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer lis.Close()
	err = srv.Serve(context.Background(), lis)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "undeclared.v1.Open/Anything")
}

// A foreign service (a protocol whose protos declare no roles, such as
// A2A's) does not stop the server: any authenticated caller of at least
// the viewer role reaches it over native gRPC, nobody without credentials
// nor with a worker's key, and it is not transcoded for HTTP.
func TestForeignServiceIsAuthenticatedNotDeclared(t *testing.T) {
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String("foreign/v1/foreign.proto"), Package: proto.String("foreign.v1"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("Empty")}},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Peer"), Method: []*descriptorpb.MethodDescriptorProto{{
			Name: proto.String("Anything"), InputType: proto.String(".foreign.v1.Empty"), OutputType: proto.String(".foreign.v1.Empty"),
		}}}},
	}, protoregistry.GlobalFiles)
	require.NoError(t, err)
	authn, err := auth.New(&auth.Config{APIKeys: []auth.APIKeyConfig{
		{Name: "v", Tenant: "acme", Role: auth.RoleViewer, Key: "k-viewer"},
		{Name: "w", Tenant: "acme", Role: auth.RoleWorker, Key: "k-worker"},
	}})
	require.NoError(t, err)
	srv, err := server.New(server.Config{Authenticator: authn})
	require.NoError(t, err)
	srv.RegisterForeign(unimplementedDesc(fd.Services().Get(0)), struct{}{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
	})
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	empty := fd.Messages().Get(0)
	call := func(key string) error {
		ctx := context.Background()
		if key != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
		}
		return conn.Invoke(ctx, "/foreign.v1.Peer/Anything", dynamicpb.NewMessage(empty), dynamicpb.NewMessage(empty))
	}
	assert.Equal(t, codes.Unauthenticated, status.Code(call("")))
	assert.Equal(t, codes.PermissionDenied, status.Code(call("k-worker")))
	err = call("k-viewer")
	assert.Equal(t, codes.Unimplemented, status.Code(err))
	assert.Contains(t, status.Convert(err).Message(), "reached /foreign.v1.Peer/Anything")

	req, err := http.NewRequest(http.MethodPost, "http://"+lis.Addr().String()+"/foreign.v1.Peer/Anything", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k-viewer")
	resp, err := http1().Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.NotContains(t, string(body), "reached", "a foreign service is native gRPC only")
}

// Connect and gRPC-Web calls reach the same interceptor chain: an
// operator's JSON call to a worker-only method is permission_denied too.
func TestRolesOverConnect(t *testing.T) {
	ts := startTCP(t, server.Config{})
	req, err := http.NewRequest(http.MethodPost, ts.base+"/agentruntime.control.v1.ControlService/ClaimTurn", strings.NewReader(`{"workerId":"w1"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http1().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, string(body))
	assert.Contains(t, string(body), `"code":"permission_denied"`)
	assert.Contains(t, string(body), "needs role worker; the caller holds operator")
}
