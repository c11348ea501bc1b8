// Package control is the control service: it owns sessions, threads, turns, the queue, human actions, subagents, channels and the event subscription (DESIGN §2).
//
// Its RPCs are built by the issue that owns the service; until then they
// answer Unimplemented (the embedded Unimplemented server).
package control

import (
	"google.golang.org/grpc"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/services/kit"
)

// Name is the service's name in `agentruntime serve <name>`.
const Name = "control"

// HealthName is the grpc.health.v1 service name probes ask for.
var HealthName = controlv1.ControlService_ServiceDesc.ServiceName

// Service implements controlv1.ControlServiceServer.
type Service struct {
	controlv1.UnimplementedControlServiceServer
	deps kit.Deps
}

// New builds the service on its dependencies.
func New(deps kit.Deps) *Service { return &Service{deps: deps} }

// Name implements kit.Service.
func (s *Service) Name() string { return Name }

// HealthName implements kit.Service.
func (s *Service) HealthName() string { return HealthName }

// Register implements kit.Service.
func (s *Service) Register(g *grpc.Server) { controlv1.RegisterControlServiceServer(g, s) }
