package server

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// With TLS the port still splits native gRPC from the HTTP/1.1 protocols
// (http.go): each connection's TLS handshake comes first, then the same
// look at its first bytes. ALPN decides what a client speaks after the
// handshake: a client that offers "http/1.1" (browsers, curl, Go's
// net/http, Connect and gRPC-Web clients, which offer "h2" too) is given
// HTTP/1.1 and reaches the transcoder; a client that offers only "h2"
// (grpc-go, grpc-java, grpc-js; grpcio offers "grpc-exp" and "h2") is given
// h2 and reaches gRPC's own transport. A client that offers both and then
// speaks native gRPC is not served: gRPC needs HTTP/2, and the HTTP side
// speaks HTTP/1.1 only, as it does without TLS.

// serverTLS is base with the protocols of the port: "h2" and "http/1.1",
// HTTP/1.1 chosen whenever the client offers it. base is not modified; its
// own GetConfigForClient and NextProtos are replaced.
func serverTLS(base *tls.Config) *tls.Config {
	cfg := base.Clone()
	cfg.GetConfigForClient = nil
	if cfg.MinVersion < tls.VersionTLS12 {
		cfg.MinVersion = tls.VersionTLS12
	}
	cfg.NextProtos = []string{"h2", "http/1.1"}
	http1 := cfg.Clone()
	http1.NextProtos = []string{"http/1.1"}
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if slices.Contains(hello.SupportedProtos, "http/1.1") {
			return http1, nil
		}
		return nil, nil
	}
	return cfg
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
