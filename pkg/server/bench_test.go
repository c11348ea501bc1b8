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
// TCP, sequentially (latency, not throughput), on five servers set up side
// by side and called in turn within every iteration, so that the machine's
// noise falls on all of them alike:
//
//   - raw: a bare grpc.Server (no interceptors) on grpc's own Serve, the
//     building block;
//   - before: the kit's grpc.Server on grpc's own Serve, as Serve was before
//     browser protocols;
//   - after: the kit's Serve, native gRPC routed by the connection splitter
//     to grpc's Serve;
//   - servehttp: the kit's grpc.Server behind grpc.Server.ServeHTTP on an
//     h2c http.Server, the path the splitter keeps native clients off;
//   - connect: Connect (binary) over HTTP/1.1 through the transcoder.
//
// It reports each one's ns/call and the ratios after/before, after/raw and
// servehttp/before.
func BenchmarkUnaryLatency(b *testing.B) {
	req := &healthpb.HealthCheckRequest{}
	ctx := context.Background()
	grpcCall := func(addr string) func() error {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = conn.Close() })
		client := healthpb.NewHealthClient(conn)
		return func() error { _, err := client.Check(ctx, req); return err }
	}

	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	rawLis := listenLoopback(b)
	go func() { _ = gs.Serve(rawLis) }()
	b.Cleanup(gs.Stop)

	before := benchServer(b)
	beforeLis := listenLoopback(b)
	go func() { _ = before.GRPC().Serve(beforeLis) }()
	b.Cleanup(before.GRPC().Stop)

	afterAddr := serveKit(b, benchServer(b))

	viaHTTP := benchServer(b)
	httpLis := listenLoopback(b)
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	hs := &http.Server{Handler: viaHTTP.GRPC(), Protocols: &protocols}
	go func() { _ = hs.Serve(httpLis) }()
	b.Cleanup(func() { _ = hs.Close() })

	connectClient := connect.NewClient[healthpb.HealthCheckRequest, healthpb.HealthCheckResponse](
		http1(), "http://"+afterAddr+"/grpc.health.v1.Health/Check")

	variants := []struct {
		name string
		call func() error
		ns   time.Duration
	}{
		{name: "raw", call: grpcCall(rawLis.Addr().String())},
		{name: "before", call: grpcCall(beforeLis.Addr().String())},
		{name: "after", call: grpcCall(afterAddr)},
		{name: "servehttp", call: grpcCall(httpLis.Addr().String())},
		{name: "connect", call: func() error { _, err := connectClient.CallUnary(ctx, connect.NewRequest(req)); return err }},
	}
	for _, v := range variants { // connect outside the timer
		if err := v.call(); err != nil {
			b.Fatalf("%s: %v", v.name, err)
		}
	}
	b.ResetTimer()
	n := 0
	for b.Loop() {
		for i := range variants {
			start := time.Now()
			if err := variants[i].call(); err != nil {
				b.Fatalf("%s: %v", variants[i].name, err)
			}
			variants[i].ns += time.Since(start)
		}
		n++
	}
	per := map[string]float64{}
	for _, v := range variants {
		per[v.name] = float64(v.ns.Nanoseconds()) / float64(n)
		b.ReportMetric(per[v.name], v.name+"-ns/call")
	}
	b.ReportMetric(per["after"]/per["before"], "after/before")
	b.ReportMetric(per["after"]/per["raw"], "after/raw")
	b.ReportMetric(per["servehttp"]/per["before"], "servehttp/before")
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
