// Package routing is the routing service: it owns model routing, fallback, cost, budgets, quotas and rate limits (DESIGN §2).
//
// Its RPCs are built by the issue that owns the service; until then they
// answer Unimplemented (the embedded Unimplemented server).
package routing

import (
	"google.golang.org/grpc"

	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/services/kit"
)

// Name is the service's name in `agentruntime serve <name>`.
const Name = "routing"

// HealthName is the grpc.health.v1 service name probes ask for.
var HealthName = routingv1.RoutingService_ServiceDesc.ServiceName

// Service implements routingv1.RoutingServiceServer.
type Service struct {
	routingv1.UnimplementedRoutingServiceServer
	deps kit.Deps
}

// New builds the service on its dependencies.
func New(deps kit.Deps) *Service { return &Service{deps: deps} }

// Name implements kit.Service.
func (s *Service) Name() string { return Name }

// HealthName implements kit.Service.
func (s *Service) HealthName() string { return HealthName }

// Register implements kit.Service.
func (s *Service) Register(g *grpc.Server) { routingv1.RegisterRoutingServiceServer(g, s) }
