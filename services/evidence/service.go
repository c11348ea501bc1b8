// Package evidence is the evidence service: it owns evidence packs, replay and review exports and benchmark trials (DESIGN §2).
//
// Its RPCs are built by the issue that owns the service; until then they
// answer Unimplemented (the embedded Unimplemented server).
package evidence

import (
	"google.golang.org/grpc"

	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	"github.com/agentruntime/agentruntime/services/kit"
)

// Name is the service's name in `agentruntime serve <name>`.
const Name = "evidence"

// HealthName is the grpc.health.v1 service name probes ask for.
var HealthName = evidencev1.EvidenceService_ServiceDesc.ServiceName

// Service implements evidencev1.EvidenceServiceServer.
type Service struct {
	evidencev1.UnimplementedEvidenceServiceServer
	deps kit.Deps
}

// New builds the service on its dependencies.
func New(deps kit.Deps) *Service { return &Service{deps: deps} }

// Name implements kit.Service.
func (s *Service) Name() string { return Name }

// HealthName implements kit.Service.
func (s *Service) HealthName() string { return HealthName }

// Register implements kit.Service.
func (s *Service) Register(g *grpc.Server) { evidencev1.RegisterEvidenceServiceServer(g, s) }
