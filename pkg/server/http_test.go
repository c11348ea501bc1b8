package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/agentruntime/agentruntime/pkg/auth"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/server"
)

// tcpServer runs a Server on a real loopback port, the way the binary does,
// with the control stub registered.
type tcpServer struct {
	srv  *server.Server
	addr string
	base string
	stub *controlStub
}

func startTCP(t *testing.T, cfg server.Config) *tcpServer {
	t.Helper()
	if cfg.Authenticator == nil {
		authn, err := auth.New(&auth.Config{APIKeys: []auth.APIKeyConfig{
			{Name: "ci-bot", Tenant: "acme", Role: auth.RoleOperator, Key: testKey},
		}})
		require.NoError(t, err)
		cfg.Authenticator = authn
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.ShutdownTimeout = 2 * time.Second
	srv, err := server.New(cfg)
	require.NoError(t, err)
	stub := &controlStub{tenants: make(chan string, 10)}
	controlv1.RegisterControlServiceServer(srv.GRPC(), stub)
	srv.MarkServing()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after shutdown")
		}
	})
	addr := lis.Addr().String()
	return &tcpServer{srv: srv, addr: addr, base: "http://" + addr, stub: stub}
}

// http1 never upgrades: what a browser without TLS speaks.
func http1() *http.Client {
	return &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: false}}
}

func withKey[T any](req *connect.Request[T]) *connect.Request[T] {
	req.Header().Set("Authorization", "Bearer "+testKey)
	return req
}

func TestNativeGRPCAndConnectShareThePort(t *testing.T) {
	ts := startTCP(t, server.Config{})

	conn, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	resp, err := controlv1.NewControlServiceClient(conn).GetSession(ctxWithKey(testKey), &controlv1.GetSessionRequest{SessionId: "ses_native"})
	require.NoError(t, err)
	assert.Equal(t, uint64(7), resp.GetSequence())

	for _, proto := range []struct {
		name string
		opts []connect.ClientOption
	}{
		{"connect+json", []connect.ClientOption{connect.WithProtoJSON()}},
		{"connect+proto", nil},
		{"grpc-web", []connect.ClientOption{connect.WithGRPCWeb()}},
	} {
		t.Run(proto.name, func(t *testing.T) {
			client := connect.NewClient[controlv1.GetSessionRequest, controlv1.GetSessionResponse](
				http1(), ts.base+controlv1.ControlService_GetSession_FullMethodName, proto.opts...)
			resp, err := client.CallUnary(context.Background(), withKey(connect.NewRequest(&controlv1.GetSessionRequest{SessionId: "ses_web"})))
			require.NoError(t, err)
			assert.Equal(t, uint64(7), resp.Msg.GetSequence())
			assert.Equal(t, "acme", <-ts.stub.tenants, "the caller's tenant reached the handler")

			_, err = client.CallUnary(context.Background(), connect.NewRequest(&controlv1.GetSessionRequest{SessionId: "ses_web"}))
			assert.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(err), "no credentials: %v", err)

			_, err = client.CallUnary(context.Background(), withKey(connect.NewRequest(&controlv1.GetSessionRequest{SessionId: "has.dot"})))
			require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err), "%v", err)
			var cerr *connect.Error
			require.ErrorAs(t, err, &cerr)
			var fields []string
			for _, d := range cerr.Details() {
				v, err := d.Value()
				require.NoError(t, err)
				if br, ok := v.(*errdetails.BadRequest); ok {
					for _, fv := range br.GetFieldViolations() {
						fields = append(fields, fv.GetField())
					}
				}
			}
			assert.Equal(t, []string{"session_id"}, fields, "the field violation crosses the transcoder")
		})
	}
}

// curl -H 'Content-Type: application/json' -d '{...}' works.
func TestCurlStyleJSON(t *testing.T) {
	ts := startTCP(t, server.Config{})
	post := func(path, body string, key bool) (int, string) {
		req, err := http.NewRequest(http.MethodPost, ts.base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if key {
			req.Header.Set("Authorization", "Bearer "+testKey)
		}
		resp, err := http1().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	code, body := post("/agentruntime.control.v1.ControlService/GetSession", `{"sessionId":"ses_curl"}`, true)
	assert.Equal(t, http.StatusOK, code, body)
	var got struct{ Sequence string }
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	assert.Equal(t, "7", got.Sequence, "uint64 is a JSON string, as protojson says")

	code, body = post("/grpc.health.v1.Health/Check", `{}`, false)
	assert.Equal(t, http.StatusOK, code, body)
	assert.JSONEq(t, `{"status":"SERVING"}`, body, "health needs no credentials over HTTP either")

	code, body = post("/agentruntime.control.v1.ControlService/GetSession", `{"sessionId":""}`, true)
	assert.Equal(t, http.StatusBadRequest, code, body)
	assert.Contains(t, body, `"code":"invalid_argument"`)
	assert.Contains(t, body, "session_id")

	code, _ = post("/agentruntime.control.v1.ControlService/NoSuchMethod", `{}`, true)
	assert.Equal(t, http.StatusNotFound, code)
}

func preflight(t *testing.T, base, origin string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodOptions, base+"/agentruntime.control.v1.ControlService/GetSession", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", http.MethodPost)
	// Browsers send the list sorted and lowercase.
	req.Header.Set("Access-Control-Request-Headers", "authorization,connect-protocol-version,content-type")
	resp, err := http1().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.Header.Get("Access-Control-Allow-Origin")
}

func TestCORSOnLoopbackAllowsLoopbackOriginsByDefault(t *testing.T) {
	ts := startTCP(t, server.Config{})
	for _, origin := range []string{"http://localhost:5173", "http://127.0.0.1:8080", "http://[::1]:3000"} {
		assert.Equal(t, origin, preflight(t, ts.base, origin), origin)
	}
	for _, origin := range []string{"https://evil.example", "http://localhost.evil.example", "null"} {
		assert.Empty(t, preflight(t, ts.base, origin), origin)
	}
}

func TestCORSConfiguredOriginsOnly(t *testing.T) {
	ts := startTCP(t, server.Config{CORSOrigins: []string{"https://console.example.com"}})
	assert.Equal(t, "https://console.example.com", preflight(t, ts.base, "https://console.example.com"))
	assert.Empty(t, preflight(t, ts.base, "http://localhost:5173"), "a configured list replaces the loopback default")
}

// A server not on loopback allows no browser origin unless configured; the
// harness's in-memory network (pipeListener) stands in for a non-loopback
// address.
func TestCORSOffByDefaultOutsideLoopback(t *testing.T) {
	h := start(t)
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return h.dial(ctx)
	}}}
	req, err := http.NewRequest(http.MethodOptions, "http://harness/grpc.health.v1.Health/Check", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "http://localhost:5173")
	req.Header.Set("Access-Control-Request-Method", http.MethodPost)
	resp, err := client.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))

	// The same connection type still serves the call itself.
	req, err = http.NewRequest(http.MethodPost, "http://harness/grpc.health.v1.Health/Check", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err = client.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, string(body))
}

func TestHealthOverGRPCWebStream(t *testing.T) {
	ts := startTCP(t, server.Config{})
	client := connect.NewClient[healthpb.HealthCheckRequest, healthpb.HealthCheckResponse](
		http1(), ts.base+"/grpc.health.v1.Health/Watch", connect.WithGRPCWeb())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := client.CallServerStream(ctx, connect.NewRequest(&healthpb.HealthCheckRequest{}))
	require.NoError(t, err)
	require.True(t, stream.Receive(), "%v", stream.Err())
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, stream.Msg().GetStatus())
}
