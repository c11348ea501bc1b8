// Package evidence is the evidence service: it owns evidence packs, replay
// and review exports, benchmark trials, and the spec's JSON rendering of
// events and snapshots (docs/architecture.md, "Owners"). See
// docs/services/evidence.md.
package evidence

import (
	"context"

	"google.golang.org/grpc"

	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/evidence/api"
	"github.com/agentruntime/agentruntime/services/evidence/app"
	"github.com/agentruntime/agentruntime/services/evidence/readmodel"
	"github.com/agentruntime/agentruntime/services/kit"
)

// Name is the service's name in `agentruntime serve <name>`.
const Name = "evidence"

// HealthName is the grpc.health.v1 service name probes ask for.
var HealthName = evidencev1.EvidenceService_ServiceDesc.ServiceName

// Service is the composition of the evidence service.
type Service struct {
	deps    kit.Deps
	app     *app.App
	handler *api.Handler
}

// New builds the service on its dependencies.
func New(deps kit.Deps) *Service {
	a := app.New(deps.Log, deps.Store)
	return &Service{deps: deps, app: a, handler: &api.Handler{App: a}}
}

// Name implements kit.Service.
func (s *Service) Name() string { return Name }

// HealthName implements kit.Service.
func (s *Service) HealthName() string { return HealthName }

// Register implements kit.Service.
func (s *Service) Register(g *grpc.Server) { evidencev1.RegisterEvidenceServiceServer(g, s.handler) }

// Run implements kit.Runner: the evidence projection over the whole log.
func (s *Service) Run(ctx context.Context) error {
	return projector.Run(ctx, s.deps.Log, s.deps.Store, readmodel.Projection{}, s.deps.Logger)
}

// Projections implements kit.Projector.
func (s *Service) Projections() []projector.Projection {
	return []projector.Projection{readmodel.Projection{}}
}
