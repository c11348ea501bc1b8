// Package kit holds what every service is built from: the dependencies the
// composition root hands in, and the interface the binary registers
// services through.
package kit

import (
	"log/slog"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/projection"
)

// Deps are a service's dependencies: the event log it appends to and reads
// from, the projection store its read models live in, and telemetry.
type Deps struct {
	Log            *eventlog.Log
	Store          projection.Store
	Logger         *slog.Logger
	TracerProvider trace.TracerProvider
}

// Service is one of the five agentruntime services.
type Service interface {
	// Name as in `agentruntime serve <name>`.
	Name() string
	// HealthName is the grpc.health.v1 name probes ask for: the full gRPC
	// service name, e.g. "agentruntime.control.v1.ControlService".
	HealthName() string
	// Register adds the service's gRPC API to a server.
	Register(*grpc.Server)
}
