// Package tasks is the tasks service: it owns agent tasks, attempts, the
// task graph, jobs and worker leases (docs/architecture.md, "Owners").
// This package is the
// composition point: New wires the app (services/tasks/app) on its
// dependencies, Register exposes it over gRPC (services/tasks/api), Run
// runs its background work.
package tasks

import (
	"context"
	"time"

	"google.golang.org/grpc"

	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/held"
	"github.com/agentruntime/agentruntime/pkg/lease"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/tasks/api"
	"github.com/agentruntime/agentruntime/services/tasks/app"
)

// Name is the service's name in `agentruntime serve <name>`.
const Name = "tasks"

// HealthName is the grpc.health.v1 service name probes ask for.
var HealthName = tasksv1.TasksService_ServiceDesc.ServiceName

// LeasePrefix prefixes the service's Redis lease keys.
const LeasePrefix = "agentruntime:tasks:lease:"

// Service is the tasks service: kit.Service and kit.Runner.
type Service struct {
	deps kit.Deps
	app  *app.App
	held *held.Store
}

// Options tune a service beyond its dependencies (tests shorten the sweep).
type Options struct {
	SweepInterval time.Duration
	// PollNap: app.Config.PollNap.
	PollNap time.Duration
	Now     func() time.Time
}

// New builds the service on its dependencies.
func New(deps kit.Deps) *Service { return NewWithOptions(deps, Options{}) }

// NewWithOptions is New with tuning.
func NewWithOptions(deps kit.Deps, opts Options) *Service {
	var leases lease.Store = lease.NewMemory(opts.Now)
	if deps.Redis != nil {
		leases = lease.NewRedis(deps.Redis, LeasePrefix)
	}
	a := app.New(deps.Log, deps.Store, leases, deps.Logger, app.Config{SweepInterval: opts.SweepInterval, PollNap: opts.PollNap, Now: opts.Now})
	return &Service{deps: deps, app: a, held: deps.Holds()}
}

// App exposes the use cases (for in-process drivers and tests).
func (s *Service) App() *app.App { return s.app }

// Name implements kit.Service.
func (s *Service) Name() string { return Name }

// HealthName implements kit.Service.
func (s *Service) HealthName() string { return HealthName }

// Register implements kit.Service.
func (s *Service) Register(g *grpc.Server) {
	tasksv1.RegisterTasksServiceServer(g, &api.Handler{App: s.app, Held: s.held})
}

// Run implements kit.Runner: the records projector, the dependency reactor
// and the lease/timeout sweeper.
func (s *Service) Run(ctx context.Context) error { return s.app.Run(ctx) }

// Projections implements kit.Projector.
func (s *Service) Projections() []projector.Projection { return s.app.Projections() }
