package server_test

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/server"
	"github.com/agentruntime/agentruntime/pkg/telemetry"
)

// A service's main: build the providers, the server, register, serve until
// SIGTERM.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))

	providers, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: "control"})
	if err != nil {
		log.Error("telemetry", "error", err)
		return
	}
	defer providers.Shutdown(context.Background())

	srv, err := server.New(server.Config{
		Listen:         "127.0.0.1:7070",
		Logger:         log,
		TracerProvider: providers.TracerProvider,
		MeterProvider:  providers.MeterProvider,
		Authenticator:  auth.Anonymous("dev"),
	})
	if err != nil {
		log.Error("server", "error", err)
		return
	}
	// controlv1.RegisterControlServiceServer(srv.GRPC(), handler)
	lis, err := srv.Listen()
	if err != nil {
		log.Error("listen", "error", err)
		return
	}
	srv.MarkServing("agentruntime.control.v1.ControlService")
	if err := srv.Serve(ctx, lis); err != nil {
		log.Error("serve", "error", err)
	}
}
