// Package routing is the routing service: it owns model routing, fallback,
// cost, budgets, quotas and rate limits (docs/architecture.md, "Owners").
// See docs/services/routing.md.
package routing

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/routing/adapters"
	"github.com/agentruntime/agentruntime/services/routing/api"
	"github.com/agentruntime/agentruntime/services/routing/app"
	"github.com/agentruntime/agentruntime/services/routing/readmodel"
)

// Name is the service's name in `agentruntime serve <name>`.
const Name = "routing"

// HealthName is the grpc.health.v1 service name probes ask for.
var HealthName = routingv1.RoutingService_ServiceDesc.ServiceName

// Service is the composition of the routing service.
type Service struct {
	deps    kit.Deps
	handler *api.Handler
	// configErr is a bad --models file: Run fails with it so the process
	// stops instead of routing on a registry nobody meant.
	configErr error
}

// New builds the service on its dependencies. The model registry config is
// read from deps.Config.ModelsFile (--models, AR_MODELS; none: an empty
// registry).
func New(deps kit.Deps) *Service {
	var config *eventsv1.Registry
	var configErr error
	if path := deps.Config.ModelsFile; path != "" {
		config, configErr = app.LoadConfig(path)
	}
	var limits app.Limiter = adapters.NewMemory()
	if deps.Redis != nil {
		limits = adapters.NewRedis(deps.Redis)
	}
	a := app.New(deps.Log, deps.Store, limits, config)
	if deps.MeterProvider != nil {
		// Before any request: the writer's counter is not swapped under use.
		if err := a.Instrument(deps.MeterProvider); err != nil && deps.Logger != nil {
			deps.Logger.Error("command metrics not recorded", "error", err)
		}
	}
	return &Service{deps: deps, configErr: configErr, handler: &api.Handler{App: a}}
}

// Name implements kit.Service.
func (s *Service) Name() string { return Name }

// HealthName implements kit.Service.
func (s *Service) HealthName() string { return HealthName }

// Register implements kit.Service.
func (s *Service) Register(g *grpc.Server) { routingv1.RegisterRoutingServiceServer(g, s.handler) }

// Run implements kit.Runner: the routing read model's projector.
func (s *Service) Run(ctx context.Context) error {
	if s.configErr != nil {
		return fmt.Errorf("--models %s: %w", s.deps.Config.ModelsFile, s.configErr)
	}
	return projector.Run(ctx, s.deps.Log, s.deps.Store, s.Projections()[0], s.deps.Logger,
		projector.WithAfterBatch(s.handler.App.Applied))
}

// Projections implements kit.Projector.
func (s *Service) Projections() []projector.Projection {
	return []projector.Projection{readmodel.Projection{Subjects: s.deps.Log.Subjects}}
}
