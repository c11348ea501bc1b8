package server_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/server"
)

// BenchmarkUnaryLatency measures one health Check round trip on loopback
// TCP, sequentially (latency, not throughput):
//
//   - raw: a bare grpc.Server (no interceptors) on grpc's own Serve, the
//     building block;
//   - native_before: the kit's grpc.Server on grpc's own Serve, as Serve
//     was before browser protocols;
//   - native_after: the kit's Serve, native gRPC routed by the connection
//     splitter to grpc's Serve;
//   - servehttp_h2c: the kit's grpc.Server behind grpc.Server.ServeHTTP on
//     an h2c http.Server, the path the splitter avoids for native clients;
//   - connect_http1: Connect (binary) over HTTP/1.1 through the transcoder.
func BenchmarkUnaryLatency(b *testing.B) {
	req := &healthpb.HealthCheckRequest{}
	grpcCheck := func(b *testing.B, addr string) {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		client := healthpb.NewHealthClient(conn)
		ctx := context.Background()
		if _, err := client.Check(ctx, req); err != nil { // connect outside the timer
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := client.Check(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	}

	b.Run("raw", func(b *testing.B) {
		gs := grpc.NewServer()
		healthpb.RegisterHealthServer(gs, health.NewServer())
		lis := listenLoopback(b)
		go func() { _ = gs.Serve(lis) }()
		defer gs.Stop()
		grpcCheck(b, lis.Addr().String())
	})
	b.Run("native_before", func(b *testing.B) {
		srv := benchServer(b)
		lis := listenLoopback(b)
		go func() { _ = srv.GRPC().Serve(lis) }()
		defer srv.GRPC().Stop()
		grpcCheck(b, lis.Addr().String())
	})
	b.Run("native_after", func(b *testing.B) {
		srv := benchServer(b)
		addr := serveKit(b, srv)
		grpcCheck(b, addr)
	})
	b.Run("servehttp_h2c", func(b *testing.B) {
		srv := benchServer(b)
		lis := listenLoopback(b)
		var protocols http.Protocols
		protocols.SetUnencryptedHTTP2(true)
		hs := &http.Server{Handler: srv.GRPC(), Protocols: &protocols}
		go func() { _ = hs.Serve(lis) }()
		defer hs.Close()
		grpcCheck(b, lis.Addr().String())
	})
	b.Run("connect_http1", func(b *testing.B) {
		srv := benchServer(b)
		addr := serveKit(b, srv)
		client := connect.NewClient[healthpb.HealthCheckRequest, healthpb.HealthCheckResponse](
			http1(), "http://"+addr+"/grpc.health.v1.Health/Check")
		ctx := context.Background()
		if _, err := client.CallUnary(ctx, connect.NewRequest(req)); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := client.CallUnary(ctx, connect.NewRequest(req)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func listenLoopback(b *testing.B) net.Listener {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return lis
}

func benchServer(b *testing.B) *server.Server {
	srv, err := server.New(server.Config{
		Logger:        slog.New(slog.DiscardHandler),
		Authenticator: auth.Anonymous("bench"),
	})
	if err != nil {
		b.Fatal(err)
	}
	srv.MarkServing()
	return srv
}

func serveKit(b *testing.B, srv *server.Server) string {
	lis := listenLoopback(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	b.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			b.Error("Serve did not return")
		}
	})
	return lis.Addr().String()
}
