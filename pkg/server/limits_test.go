package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/server"
)

// gzipBomb is n MiB of zero bytes, gzipped: one gzip member of a MiB
// (about a KiB) repeated n times, which gzip readers read as one stream.
// Compressing once keeps the test fast under the race detector.
func gzipBomb(t testing.TB, n int) []byte {
	t.Helper()
	var member bytes.Buffer
	zw, err := gzip.NewWriterLevel(&member, gzip.BestCompression)
	require.NoError(t, err)
	_, err = zw.Write(make([]byte, 1<<20))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return bytes.Repeat(member.Bytes(), n)
}

// httpPost sends body to path and returns the status and the answer.
func httpPost(t *testing.T, base, path string, body []byte, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header = header
	resp, err := http1().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// A few hundred KiB of gzip that would expand to 200 MiB, sent without
// credentials, is refused once it passes the message size limit: the
// server allocates about the limit, not the expansion.
func TestGzipBombIsRefusedAtTheMessageLimit(t *testing.T) {
	ts := startTCP(t, server.Config{})
	bomb := gzipBomb(t, 200)
	require.Less(t, len(bomb), server.MaxMessageBytes, "the compressed body passes the transcoder's buffer limit")

	header := http.Header{}
	header.Set("Content-Type", "application/json")
	header.Set("Content-Encoding", "gzip")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code, body := httpPost(t, ts.base, "/grpc.health.v1.Health/Check", bomb, header)
	runtime.ReadMemStats(&after)

	assert.Equal(t, http.StatusTooManyRequests, code, body)
	assert.Contains(t, body, `"code":"resource_exhausted"`)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d MiB for a %d KiB bomb", allocated>>20, len(bomb)>>10)
	assert.Less(t, allocated, uint64(16<<20), "the expansion was counted, not buffered")

	// A compressed message under the limit still works, the empty one
	// included.
	for _, msg := range []string{`{}`, `{"service":""}`} {
		var small bytes.Buffer
		zw := gzip.NewWriter(&small)
		_, _ = zw.Write([]byte(msg))
		require.NoError(t, zw.Close())
		code, body = httpPost(t, ts.base, "/grpc.health.v1.Health/Check", small.Bytes(), header)
		assert.Equal(t, http.StatusOK, code, body)
		assert.JSONEq(t, `{"status":"SERVING"}`, body)
	}
	header.Set("Authorization", "Bearer "+testKey)
	var msg bytes.Buffer
	zw := gzip.NewWriter(&msg)
	_, _ = zw.Write([]byte(`{"sessionId":"ses_gz"}`))
	require.NoError(t, zw.Close())
	code, body = httpPost(t, ts.base, "/agentruntime.control.v1.ControlService/GetSession", msg.Bytes(), header)
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "acme", <-ts.stub.tenants)
}

// A message compressed inside its envelope (gRPC-Web here) decompresses to
// at most the limit: the transcoder buffers about the limit, not the
// expansion, and answers ResourceExhausted.
func TestGzipBombInAnEnvelopeIsRefusedAtTheMessageLimit(t *testing.T) {
	ts := startTCP(t, server.Config{})
	bomb := gzipBomb(t, 200)
	envelope := append([]byte{1, 0, 0, 0, 0}, bomb...) // flag 1: compressed
	binary.BigEndian.PutUint32(envelope[1:5], uint32(len(bomb)))

	header := http.Header{}
	header.Set("Content-Type", "application/grpc-web+proto")
	header.Set("Grpc-Encoding", "gzip")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	req, err := http.NewRequest(http.MethodPost, ts.base+"/grpc.health.v1.Health/Check", bytes.NewReader(envelope))
	require.NoError(t, err)
	req.Header = header
	resp, err := http1().Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	runtime.ReadMemStats(&after)

	grpcStatus := resp.Header.Get("Grpc-Status")
	if grpcStatus == "" { // trailers in the body's last frame
		grpcStatus, _, _ = strings.Cut(strings.SplitAfter(string(body), "grpc-status:")[1], "\r\n")
	}
	assert.Equal(t, strconv.Itoa(int(codes.ResourceExhausted)), strings.TrimSpace(grpcStatus), "%q", body)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d MiB for a %d KiB bomb in an envelope", allocated>>20, len(bomb)>>10)
	// A few times the limit: the transcoder's buffer doubles as it fills,
	// and under the race detector sync.Pool keeps fewer buffers.
	assert.Less(t, allocated, uint64(96<<20), "decompression stopped at the limit (%d bytes)", server.MaxMessageBytes)
}

// A body that is not the method's message in JSON is the caller's error.
func TestMalformedJSONIsInvalidArgument(t *testing.T) {
	ts := startTCP(t, server.Config{})
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	for _, body := range []string{`{"service":`, `not json`, `{"service": 5}`} {
		code, answer := httpPost(t, ts.base, "/grpc.health.v1.Health/Check", []byte(body), header)
		assert.Equal(t, http.StatusBadRequest, code, "%s: %s", body, answer)
		assert.Contains(t, answer, `"code":"invalid_argument"`, body)
	}
	header.Set("Authorization", "Bearer "+testKey)
	code, answer := httpPost(t, ts.base, "/agentruntime.control.v1.ControlService/GetSession", []byte(`{"sessionId": [1]}`), header)
	assert.Equal(t, http.StatusBadRequest, code, answer)
	assert.Contains(t, answer, `"code":"invalid_argument"`)
}

// Health Watch needs no credentials and never ends: at most
// MaxHealthWatches are open at once, over native gRPC and HTTP together.
func TestHealthWatchesAreCapped(t *testing.T) {
	ts := startTCP(t, server.Config{})
	conn, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	health := healthpb.NewHealthClient(conn)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch := func(ctx context.Context) error {
		w, err := health.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return err
		}
		_, err = w.Recv()
		return err
	}
	first, cancelFirst := context.WithCancel(ctx)
	require.NoError(t, watch(first))
	for range server.MaxHealthWatches - 1 {
		require.NoError(t, watch(ctx))
	}
	err = watch(ctx)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)

	web := connect.NewClient[healthpb.HealthCheckRequest, healthpb.HealthCheckResponse](
		http1(), ts.base+"/grpc.health.v1.Health/Watch", connect.WithGRPCWeb())
	stream, err := web.CallServerStream(ctx, connect.NewRequest(&healthpb.HealthCheckRequest{}))
	require.NoError(t, err)
	assert.False(t, stream.Receive())
	assert.Equal(t, connect.CodeResourceExhausted, connect.CodeOf(stream.Err()), "%v", stream.Err())
	_ = stream.Close()

	// A watch that ends frees its place.
	cancelFirst()
	require.Eventually(t, func() bool { return watch(ctx) == nil }, 5*time.Second, 10*time.Millisecond)
	// Check is not capped.
	_, err = health.Check(ctx, &healthpb.HealthCheckRequest{})
	assert.NoError(t, err)
}

// The native side announces its per-connection stream cap and disconnects
// a client that pings more often than the enforcement policy allows.
func TestNativeStreamCapAndPingEnforcement(t *testing.T) {
	ts := startTCP(t, server.Config{})
	c, err := net.Dial("tcp", ts.addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(c, http2.ClientPreface)
	require.NoError(t, err)
	fr := http2.NewFramer(c, c)
	require.NoError(t, fr.WriteSettings())

	var maxStreams uint32
	var sentPings bool
	for {
		f, err := fr.ReadFrame()
		require.NoError(t, err, "the server ended the connection without GOAWAY")
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			v, ok := f.Value(http2.SettingMaxConcurrentStreams)
			require.True(t, ok, "the server announces a stream cap")
			maxStreams = v
			require.NoError(t, fr.WriteSettingsAck())
			if !sentPings {
				sentPings = true
				for i := range 5 {
					require.NoError(t, fr.WritePing(false, [8]byte{byte(i)}))
				}
			}
		case *http2.GoAwayFrame:
			assert.Equal(t, http2.ErrCodeEnhanceYourCalm, f.ErrCode)
			assert.Equal(t, "too_many_pings", string(f.DebugData()))
			assert.Equal(t, uint32(server.MaxStreamsPerConn), maxStreams)
			return
		}
	}
}

// Dev without credentials answers only to its loopback names; a page that
// rebinds its own name to 127.0.0.1 is refused on every path.
func TestLoopbackHostsRefuseARebindingHost(t *testing.T) {
	console := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "console") })
	ts := startTCP(t, server.Config{LoopbackHosts: true, Console: console})
	_, port, err := net.SplitHostPort(ts.addr)
	require.NoError(t, err)

	do := func(method, path, host, origin string) int {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{}`)
		}
		req, err := http.NewRequest(method, ts.base+path, body)
		require.NoError(t, err)
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http1().Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	const api = "/grpc.health.v1.Health/Check"
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port} {
		assert.Equal(t, http.StatusOK, do(http.MethodGet, "/", host, ""), host)
		assert.Equal(t, http.StatusOK, do(http.MethodPost, api, host, ""), host)
		assert.Equal(t, http.StatusOK, do(http.MethodPost, api, host, "http://"+host), "own origin %s", host)
	}
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1:1", "localhost.evil.example:" + port, "127.0.0.1.nip.io:" + port} {
		assert.Equal(t, http.StatusMisdirectedRequest, do(http.MethodGet, "/", host, ""), host)
		assert.Equal(t, http.StatusMisdirectedRequest, do(http.MethodPost, api, host, "http://"+host), host)
		assert.Equal(t, http.StatusMisdirectedRequest, do(http.MethodOptions, api, host, "http://"+host), host)
	}
	loopback := "127.0.0.1:" + port
	for _, origin := range []string{"http://evil.example:" + port, "http://localhost:5173", "null", "https://127.0.0.1:" + port} {
		assert.Equal(t, http.StatusForbidden, do(http.MethodPost, api, loopback, origin), origin)
	}

	// Configured origins still pass.
	ts2 := startTCP(t, server.Config{LoopbackHosts: true, CORSOrigins: []string{"https://console.example.com"}})
	req, err := http.NewRequest(http.MethodPost, ts2.base+api, strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://console.example.com")
	resp, err := http1().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// Without LoopbackHosts (a server with credentials) any Host is served,
// as before.
func TestAnyHostWithoutLoopbackHosts(t *testing.T) {
	ts := startTCP(t, server.Config{})
	req, err := http.NewRequest(http.MethodPost, ts.base+"/grpc.health.v1.Health/Check", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Host = "api.example.com"
	req.Header.Set("Content-Type", "application/json")
	resp, err := http1().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// An HTTP request that trickles its body is cut off after the read
// timeout; a server stream whose request has been read outlives it.
func TestSlowBodyIsCutButServerStreamsOutliveTheDeadline(t *testing.T) {
	const deadline = 300 * time.Millisecond
	server.SetHTTPReadTimeout(t, deadline)
	ts := startTCP(t, server.Config{})

	c, err := net.Dial("tcp", ts.addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(c, "POST /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: "+ts.addr+
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	require.NoError(t, err)
	answer, err := io.ReadAll(c) // until the server closes the connection
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server still waits for the body after 10s: %v; %q", err, answer)
	assert.NotContains(t, string(answer), "200 OK")

	ts.srv.MarkServing("probe.v1.Probe")
	web := connect.NewClient[healthpb.HealthCheckRequest, healthpb.HealthCheckResponse](
		http1(), ts.base+"/grpc.health.v1.Health/Watch", connect.WithGRPCWeb())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := web.CallServerStream(ctx, connect.NewRequest(&healthpb.HealthCheckRequest{Service: "probe.v1.Probe"}))
	require.NoError(t, err)
	require.True(t, stream.Receive(), "%v", stream.Err())
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, stream.Msg().GetStatus())
	// Nothing to wait for: the read timeout has to pass.
	time.Sleep(3 * deadline)
	ts.srv.MarkNotServing("probe.v1.Probe")
	require.True(t, stream.Receive(), "the stream ended with the read timeout: %v", stream.Err())
	assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, stream.Msg().GetStatus())
}
