package server

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// With TLS the port still splits native gRPC from the rest (http.go):
// each connection's TLS handshake comes first, then ALPN and the first
// bytes decide. A client that offers only "h2" (grpc-go, grpc-java,
// grpc-js; grpcio offers "grpc-exp" and "h2") speaks native gRPC and goes
// to gRPC's own transport, as a connection that opens with the HTTP/2
// preface does in clear. A client that offers "h2" and "http/1.1"
// (browsers, curl, Go's net/http, proxies) may speak anything over HTTP/2:
// its connection goes to an HTTP/2 server that hands each gRPC request
// (Content-Type application/grpc) to the gRPC server's ServeHTTP and any
// other to the transcoder and the console. A client that negotiates
// "http/1.1", or nothing, goes to the HTTP/1.1 side.

// serverTLS is base with the protocols of the port, "h2" preferred, and
// a note in offered of each connection whose client also offered
// "http/1.1". base is not modified; its own GetConfigForClient and
// NextProtos are replaced.
func serverTLS(base *tls.Config, offered *sync.Map) *tls.Config {
	cfg := base.Clone()
	if cfg.MinVersion < tls.VersionTLS12 {
		cfg.MinVersion = tls.VersionTLS12
	}
	cfg.NextProtos = []string{"h2", "http/1.1"}
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if slices.Contains(hello.SupportedProtos, "http/1.1") {
			offered.Store(hello.Conn, true)
		}
		return nil, nil
	}
	return cfg
}

// isGRPC says whether an HTTP/2 request is native gRPC (not gRPC-Web).
func isGRPC(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return r.ProtoMajor == 2 && (ct == "application/grpc" || strings.HasPrefix(ct, "application/grpc+") || strings.HasPrefix(ct, "application/grpc;"))
}

// grpcOr hands gRPC requests to the gRPC server's ServeHTTP (the same
// interceptors; gRPC's own keepalive enforcement does not apply there)
// and anything else to next.
func (s *Server) grpcOr(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isGRPC(r) {
			s.grpc.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// mixedHTTP2 serves the HTTP/2 connections of TLS clients that also
// offered HTTP/1.1 with handler (grpcOr). The connections arrive
// decrypted, so this is HTTP/2 with prior knowledge.
func (s *Server) mixedHTTP2(handler http.Handler) *http.Server {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	return &http.Server{
		Handler: handler,
		// No ReadTimeout: it would cut client and bidirectional streams.
		ReadHeaderTimeout: sniffTimeout,
		IdleTimeout:       httpIdleTimeout,
		Protocols:         &protocols,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: maxStreamsPerConn},
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}

// ServeHealth serves grpc.health.v1 alone, in clear, on lis until ctx is
// done: the same statuses as the main port (MarkServing, MarkNotServing,
// NOT_SERVING once shutdown begins), for probes that speak no TLS (the
// kubelet's gRPC probes) while the main port serves TLS. Nothing else is
// served there, and health needs no credentials. Watch streams are capped
// as on the main port.
func (s *Server) ServeHealth(ctx context.Context, lis net.Listener) error {
	srv := grpc.NewServer(append([]grpc.ServerOption{
		grpc.ChainStreamInterceptor(s.recoverStream, watchLimit(maxHealthWatches)),
		grpc.ChainUnaryInterceptor(s.recoverUnary),
	}, grpcLimits()...)...)
	healthpb.RegisterHealthServer(srv, s.health)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		srv.Stop()
	}()
	err := srv.Serve(lis)
	<-stopped
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}
