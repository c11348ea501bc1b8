// Package permission is the permission service: it owns permission
// decisions, sandbox profiles, hooks and execution environments
// (docs/architecture.md, "Owners"; the Agent Runtime standard's permission
// and sandbox, hooks and policy, and execution environment contracts).
// This file is its composition point.
package permission

import (
	"context"

	"google.golang.org/grpc"

	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/permission/adapters/hookcall"
	"github.com/agentruntime/agentruntime/services/permission/api"
	"github.com/agentruntime/agentruntime/services/permission/app"
	"github.com/agentruntime/agentruntime/services/permission/domain"
)

// Name is the service's name in `agentruntime serve <name>`.
const Name = "permission"

// HealthName is the grpc.health.v1 service name probes ask for.
var HealthName = permissionv1.PermissionService_ServiceDesc.ServiceName

// Service is the permission service.
type Service struct {
	deps    kit.Deps
	app     *app.App
	handler *api.Handler
	hooks   *hookcall.Caller
}

// New builds the service on its dependencies.
func New(deps kit.Deps) *Service {
	hooks := hookcall.New()
	hooks.TracerProvider = deps.TracerProvider
	cfg := app.Config{Log: deps.Log, Store: deps.Store, Hooks: hooks, Logger: deps.Logger}
	if deps.Config.RestrictHookHosts {
		hosts, err := domain.ParseHookHosts(deps.Config.HookAllowHosts)
		if err != nil {
			// The binary checked the patterns at start; fail closed anyway.
			hosts = &domain.HookHosts{}
			if deps.Logger != nil {
				deps.Logger.Error("hook hosts not understood; no hook target is allowed", "error", err)
			}
		}
		cfg.HookHosts = hosts
	}
	a := app.New(cfg)
	if deps.MeterProvider != nil {
		// Before any request: the writers' counters are not swapped under use.
		if err := a.Instrument(deps.MeterProvider); err != nil && deps.Logger != nil {
			deps.Logger.Error("command metrics not recorded", "error", err)
		}
	}
	return &Service{deps: deps, app: a, handler: &api.Handler{App: a, Held: deps.Holds()}, hooks: hooks}
}

// App exposes the use cases (for tests and in-process composition).
func (s *Service) App() *app.App { return s.app }

// Name implements kit.Service.
func (s *Service) Name() string { return Name }

// HealthName implements kit.Service.
func (s *Service) HealthName() string { return HealthName }

// Register implements kit.Service.
func (s *Service) Register(g *grpc.Server) {
	permissionv1.RegisterPermissionServiceServer(g, s.handler)
}

// Run implements kit.Runner: the read model's projector and the reactor
// that turns the control service's action.resolved into
// permission.resolved. Either failing stops both.
func (s *Service) Run(ctx context.Context) error {
	defer s.hooks.Close()
	return kit.RunAll(ctx,
		func(ctx context.Context) error {
			return projector.Run(ctx, s.deps.Log, s.deps.Store, s.app.Projection(), s.deps.Logger)
		},
		s.app.RunApprovalReactor,
	)
}

// Projections implements kit.Projector.
func (s *Service) Projections() []projector.Projection {
	return []projector.Projection{s.app.Projection()}
}
