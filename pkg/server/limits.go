package server

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// What a caller can make the server spend before it has shown credentials:
// every limit here holds for calls without any (docs/security.md, "Before
// credentials").
const (
	// maxStreamsPerConn bounds the concurrent calls on one native gRPC
	// connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS); a gRPC client
	// queues calls beyond it rather than fail them.
	maxStreamsPerConn = 1000
	// maxHealthWatches bounds the health Watch streams open at once over
	// both protocols: Watch needs no credentials and never ends on its own.
	maxHealthWatches = 256
	// keepaliveMinTime is the shortest interval between a client's pings
	// the server tolerates; a client pinging more often is sent GOAWAY
	// (too_many_pings) and disconnected.
	keepaliveMinTime = 10 * time.Second
	// keepaliveTime: after this long without activity on a connection the
	// server pings the client, and closes the connection when no answer
	// comes within keepaliveTimeout.
	keepaliveTime    = 2 * time.Minute
	keepaliveTimeout = 20 * time.Second
	// maxConnectionIdle: a native connection with no call for this long is
	// sent GOAWAY; clients reconnect when they next call.
	maxConnectionIdle = 15 * time.Minute
	// httpIdleTimeout closes an HTTP/1.1 keep-alive connection that has
	// waited this long for its next request.
	httpIdleTimeout = 2 * time.Minute
	// streamWorkers serve calls on goroutines kept between calls, whose
	// stacks have already grown to what a call through the interceptors,
	// a handler and its Redis or NATS client needs; a call that finds
	// none free gets a goroutine of its own, as without them. A fresh
	// goroutine per call copies its stack a few times on the way down
	// (runtime.newstack: 12% of the CPU of BenchmarkLimits).
	streamWorkers = 32
)

// httpReadTimeout bounds how long an HTTP request may take to send its
// headers and body (the headers alone: sniffTimeout). It does not bound a
// server stream: net/http lifts the read deadline once the body has been
// read. A variable only for the tests (export_test.go), read when Serve
// starts.
var httpReadTimeout = time.Minute

// grpcLimits are the server options behind the constants above.
func grpcLimits() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxConcurrentStreams(maxStreamsPerConn),
		grpc.NumStreamWorkers(streamWorkers),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             keepaliveMinTime,
			PermitWithoutStream: true,
		}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: maxConnectionIdle,
			Time:              keepaliveTime,
			Timeout:           keepaliveTimeout,
		}),
	}
}

// boundedGzip returns the gzip decompressor of the transcoder: it yields
// at most limit bytes and fails with ResourceExhausted on the byte after,
// so a small compressed body cannot expand past the message size limit in
// memory. Vanguard's own gzip reader has no bound (it reads the whole
// stream into a buffer); the compressed body is already bounded by
// vanguard.WithMaxMessageBufferBytes.
func boundedGzip(limit int64) func() connect.Decompressor {
	return func() connect.Decompressor { return &limitedGzip{limit: limit} }
}

type limitedGzip struct {
	gz    gzip.Reader
	limit int64
	n     int64 // bytes yielded since Reset
}

func (l *limitedGzip) Reset(r io.Reader) error {
	l.n = 0
	return l.gz.Reset(r)
}

func (l *limitedGzip) Read(p []byte) (int, error) {
	if l.n >= l.limit {
		// At the limit: one more byte means the message is too large.
		var probe [1]byte
		n, err := l.gz.Read(probe[:])
		if n > 0 {
			return 0, connect.NewError(connect.CodeResourceExhausted,
				fmt.Errorf("decompressed message larger than %d bytes", l.limit))
		}
		return 0, err
	}
	if rest := l.limit - l.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := l.gz.Read(p)
	l.n += int64(n)
	return n, err
}

func (l *limitedGzip) Close() error { return l.gz.Close() }

// gzipBodyLimit refuses, before the transcoder buffers anything, a
// request whose whole body is gzip (Content-Encoding: gzip, as Connect unary
// calls compress) and decompresses to more than limit bytes: it reads the
// compressed body (at most limit bytes of it) and counts its expansion
// into nothing, so such a body costs its compressed size and a small
// window, not the limit (boundedGzip would still buffer up to the limit
// before refusing). A body within the limit goes on unchanged. Messages
// compressed one by one inside envelopes (gRPC-Web, Connect streaming) are
// bounded by boundedGzip.
func gzipBodyLimit(next http.Handler, limit int64) http.Handler {
	errs := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(strings.TrimSpace(r.Header.Get("Content-Encoding")), "gzip") || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		compressed, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			_ = errs.Write(w, r, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("read request body: %w", err)))
			return
		}
		tooLarge := int64(len(compressed)) > limit
		if !tooLarge {
			if zr, err := gzip.NewReader(bytes.NewReader(compressed)); err == nil {
				n, _ := io.Copy(io.Discard, io.LimitReader(zr, limit+1))
				tooLarge = n > limit
			}
			// A body that is not gzip goes on: the transcoder says what is
			// wrong with it.
		}
		if tooLarge {
			_ = errs.Write(w, r, connect.NewError(connect.CodeResourceExhausted,
				fmt.Errorf("request body larger than %d bytes once decompressed", limit)))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(compressed))
		next.ServeHTTP(w, r)
	})
}

// requestJSON is vanguard's JSON codec whose decoding errors are the
// caller's: a request body that is not the method's message in JSON
// answers InvalidArgument (HTTP 400) instead of Internal (500). The
// transcoder targets gRPC with the binary codec, so JSON is only ever
// decoded from a client's request.
type requestJSON struct{ *vanguard.JSONCodec }

func newRequestJSON(res vanguard.TypeResolver) vanguard.Codec {
	return requestJSON{vanguard.NewJSONCodec(res)}
}

func (c requestJSON) Unmarshal(data []byte, msg proto.Message) error {
	if err := c.JSONCodec.Unmarshal(data, msg); err != nil {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("request body: %w", err))
	}
	return nil
}

// watchLimit is the stream interceptor that refuses a health Watch beyond
// limit open at once with ResourceExhausted.
func watchLimit(limit int64) grpc.StreamServerInterceptor {
	var open atomic.Int64
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if info.FullMethod != healthPrefix+"Watch" {
			return handler(srv, ss)
		}
		if open.Add(1) > limit {
			open.Add(-1)
			return status.Errorf(codes.ResourceExhausted, "more than %d health watches open; use Check", limit)
		}
		defer open.Add(-1)
		return handler(srv, ss)
	}
}
