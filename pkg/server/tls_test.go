package server_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/server"
	"github.com/agentruntime/agentruntime/pkg/testkit/testcert"
)

// With Config.TLS the one port serves native gRPC and Connect over TLS,
// whatever protocols the client offers, and nothing in clear.
func TestTLSServesBothProtocolsAndNothingInClear(t *testing.T) {
	certs := testcert.New(t)
	ts := startTCP(t, server.Config{TLS: certs.Server(t)})

	conn, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(credentials.NewTLS(certs.Client())))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	resp, err := controlv1.NewControlServiceClient(conn).GetSession(ctxWithKey(testKey), &controlv1.GetSessionRequest{SessionId: "ses_tls"})
	require.NoError(t, err)
	assert.Equal(t, uint64(7), resp.GetSequence())

	// A gRPC client that offers http/1.1 too (as proxies may) is served
	// over the mixed HTTP/2 side.
	both, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: certs.Pool(), NextProtos: []string{"h2", "http/1.1"}})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = both.Close() })
	resp, err = controlv1.NewControlServiceClient(both).GetSession(ctxWithKey(testKey), &controlv1.GetSessionRequest{SessionId: "ses_both"})
	require.NoError(t, err)
	assert.Equal(t, uint64(7), resp.GetSequence())
	_, err = controlv1.NewControlServiceClient(both).GetSession(context.Background(), &controlv1.GetSessionRequest{SessionId: "ses_both"})
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "the same interceptors: %v", err)

	// Go's client offers h2 and http/1.1, as browsers do: it is given
	// HTTP/2, and Connect JSON reaches the transcoder.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: certs.Client(), ForceAttemptHTTP2: true}}
	for _, host := range []string{ts.addr, strings.Replace(ts.addr, "127.0.0.1", "localhost", 1)} {
		req, err := http.NewRequest(http.MethodPost, "https://"+host+"/agentruntime.control.v1.ControlService/GetSession", strings.NewReader(`{"sessionId":"ses_https"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := client.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		assert.Equal(t, "HTTP/2.0", resp.Proto)
		assert.Contains(t, string(body), `"sequence":"7"`)
	}

	// A client that speaks HTTP/1.1 only gets HTTP/1.1.
	h1 := &http.Client{Transport: &http.Transport{TLSClientConfig: certs.Client(), ForceAttemptHTTP2: false}}
	req, err := http.NewRequest(http.MethodPost, "https://"+ts.addr+"/grpc.health.v1.Health/Check", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	h1resp, err := h1.Do(req)
	require.NoError(t, err)
	_ = h1resp.Body.Close()
	assert.Equal(t, http.StatusOK, h1resp.StatusCode)
	assert.Equal(t, "HTTP/1.1", h1resp.Proto)

	// A client that does not trust the CA, and clients in clear, get
	// nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	untrusted, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = untrusted.Close() })
	_, err = healthpb.NewHealthClient(untrusted).Check(ctx, &healthpb.HealthCheckRequest{})
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	assert.Contains(t, status.Convert(err).Message(), "certificate")

	plain, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = plain.Close() })
	_, err = healthpb.NewHealthClient(plain).Check(ctx, &healthpb.HealthCheckRequest{})
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)

	req, err = http.NewRequest(http.MethodPost, ts.base+"/grpc.health.v1.Health/Check", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http1().Do(req); err == nil {
		_ = resp.Body.Close()
		assert.NotEqual(t, http.StatusOK, resp.StatusCode, "a plaintext HTTP call was served")
	}
}

// ServeHealth answers the main port's health statuses in clear, and
// nothing else, while the main port serves TLS only.
func TestServeHealthInClear(t *testing.T) {
	certs := testcert.New(t)
	ts := startTCP(t, server.Config{TLS: certs.Server(t)})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ts.srv.ServeHealth(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-served)
	})

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	callCtx, callCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer callCancel()
	health := healthpb.NewHealthClient(conn)
	resp, err := health.Check(callCtx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
	ts.srv.MarkNotServing("agentruntime.control.v1.ControlService")
	resp, err = health.Check(callCtx, &healthpb.HealthCheckRequest{Service: "agentruntime.control.v1.ControlService"})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, resp.GetStatus())

	_, err = controlv1.NewControlServiceClient(conn).GetSession(ctxWithKey(testKey), &controlv1.GetSessionRequest{SessionId: "ses_clear"})
	assert.Equal(t, codes.Unimplemented, status.Code(err), "only health is served in clear: %v", err)
}
