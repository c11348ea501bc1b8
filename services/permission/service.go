// Package permission is the permission service: it owns permission decisions, sandbox profiles, hooks and execution environments (DESIGN §2).
//
// Its RPCs are built by the issue that owns the service; until then they
// answer Unimplemented (the embedded Unimplemented server).
package permission

import (
	"google.golang.org/grpc"

	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/services/kit"
)

// Name is the service's name in `agentruntime serve <name>`.
const Name = "permission"

// HealthName is the grpc.health.v1 service name probes ask for.
var HealthName = permissionv1.PermissionService_ServiceDesc.ServiceName

// Service implements permissionv1.PermissionServiceServer.
type Service struct {
	permissionv1.UnimplementedPermissionServiceServer
	deps kit.Deps
}

// New builds the service on its dependencies.
func New(deps kit.Deps) *Service { return &Service{deps: deps} }

// Name implements kit.Service.
func (s *Service) Name() string { return Name }

// HealthName implements kit.Service.
func (s *Service) HealthName() string { return HealthName }

// Register implements kit.Service.
func (s *Service) Register(g *grpc.Server) { permissionv1.RegisterPermissionServiceServer(g, s) }
