// Package control is the control service: it owns sessions, threads, turns,
// the queue, human actions, subagents, channels and the event subscription
// (docs/architecture.md, "Owners"). This file composes it: domain
// (decisions), app (use cases), api (transport), readmodel (read models);
// it registers the handler and runs the background work.
package control

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/agentruntime/agentruntime/pkg/fanout"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/lease"
	"github.com/agentruntime/agentruntime/pkg/metrics"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/control/api"
	"github.com/agentruntime/agentruntime/services/control/app"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
	"github.com/agentruntime/agentruntime/services/kit"
)

// Name is the service's name in `agentruntime serve <name>`.
const Name = "control"

// HealthName is the grpc.health.v1 service name probes ask for.
var HealthName = controlv1.ControlService_ServiceDesc.ServiceName

// Service is the control service: kit.Service and kit.Runner.
type Service struct {
	deps kit.Deps
	app  *app.App
	// ExpiryInterval is how often pending action deadlines are checked.
	ExpiryInterval time.Duration
	claims         *app.Claims
	// LeaseSweepInterval is how often turn leases are checked.
	LeaseSweepInterval time.Duration
	ownHub             *fanout.Hub
	webhooks           *app.Webhooks
	peers              *app.Peers
}

// LeasePrefix prefixes the service's Redis turn-lease keys.
const LeasePrefix = "agentruntime:control:lease:"

// New builds the service on its dependencies.
func New(deps kit.Deps) *Service {
	a := app.New(deps.Log, deps.Store)
	if deps.Config.MaxQueuedTurns > 0 {
		a.MaxQueuedTurns = deps.Config.MaxQueuedTurns
	}
	if deps.MeterProvider != nil {
		// Before any request: the writer's counter is not swapped under use.
		if err := a.Instrument(deps.MeterProvider); err != nil && deps.Logger != nil {
			deps.Logger.Error("command metrics not recorded", "error", err)
		}
	}
	// The process's hub when the binary made one; else the service's own,
	// closed when Run ends.
	a.Hub = deps.Hub
	var ownHub *fanout.Hub
	if a.Hub == nil {
		ownHub = fanout.New(deps.Log, fanout.Config{Logger: deps.Logger})
		a.Hub = ownHub
	}
	// Turn leases live in Redis when the service has it (every replica
	// sees the same holder), in process otherwise (dev: one process).
	var leases lease.Store = lease.NewMemory(nil)
	if deps.Redis != nil {
		leases = lease.NewRedis(deps.Redis, LeasePrefix)
	}
	claims := app.NewClaims(a, leases, deps.Logger)
	if deps.Held != nil || deps.Redis != nil {
		// Holds go where the other services read them; a control of its
		// own keeps them among its leases.
		claims.Held = deps.Holds()
	}
	return &Service{deps: deps, app: a, ownHub: ownHub, ExpiryInterval: 250 * time.Millisecond,
		claims: claims, LeaseSweepInterval: time.Second,
		webhooks: newWebhooks(a, deps), peers: newPeers(a, deps)}
}

// SetMaxQueuedTurns bounds each thread's queue (0: unbounded; default
// app.DefaultMaxQueuedTurns): a submit beyond it answers ResourceExhausted
// QUEUE_FULL. Call it before serving.
func (s *Service) SetMaxQueuedTurns(n int) { s.app.MaxQueuedTurns = n }

// SetClaimNap bounds one wait of a ClaimTurn long poll (default 250 ms):
// a poll wakes as soon as a turn becomes claimable in any partition of the
// log, and looks again after the nap otherwise. Call it before serving.
func (s *Service) SetClaimNap(d time.Duration) { s.claims.MaxNap = d }

// SetSubscriberLimits bounds what each new subscription may cost
// (defaults: app.DefaultSubscriberLimits).
func (s *Service) SetSubscriberLimits(l app.SubscriberLimits) { s.app.SetSubscriberLimits(l) }

// Name implements kit.Service.
func (s *Service) Name() string { return Name }

// HealthName implements kit.Service.
func (s *Service) HealthName() string { return HealthName }

// Register implements kit.Service.
func (s *Service) Register(g *grpc.Server) {
	controlv1.RegisterControlServiceServer(g, &api.Handler{App: s.app, Claims: s.claims, Webhooks: s.webhooks})
}

// Run projects the read model, expires actions whose deadline passed,
// closes subagents whose parked parent's wait ended, turns permission
// requests into actions, interrupts the turns of cancelled task runs,
// fails claimed turns whose lease expired, delivers webhooks and drives
// remote (A2A peer) subagents.
func (s *Service) Run(ctx context.Context) error {
	if s.ownHub != nil {
		defer s.ownHub.Close()
	}
	if s.deps.MeterProvider != nil {
		probe := readmodel.Gauges(s.deps.Store, time.Now)
		if err := metrics.Observe(s.deps.MeterProvider, probe, metrics.Threads, metrics.QueueDepth, metrics.ActionsPending, metrics.ActionsPendingMaxAge); err != nil {
			return err
		}
	}
	return kit.RunAll(ctx,
		// Both read models from one consumer: the log is read and decoded once.
		func(ctx context.Context) error {
			return projector.RunAll(ctx, s.deps.Log, s.deps.Store, s.deps.Logger, s.Projections())
		},
		s.webhooks.Run,
		s.peers.Run,
		func(ctx context.Context) error { return s.claims.RunSweeper(ctx, s.LeaseSweepInterval) },
		s.expireActions,
		func(ctx context.Context) error { return s.app.ReactToPermissionRequests(ctx, s.deps.Logger) },
		func(ctx context.Context) error { return s.app.ReactToTaskRunCancels(ctx, s.deps.Logger) },
	)
}

// Projections implements kit.Projector.
func (s *Service) Projections() []projector.Projection {
	return []projector.Projection{readmodel.Projection{}, readmodel.Claims{Subjects: s.deps.Log.Subjects}, readmodel.NewWebhooks(s.deps.Log)}
}

func (s *Service) expireActions(ctx context.Context) error {
	t := time.NewTicker(s.ExpiryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if _, err := s.app.ExpireDue(ctx); err != nil && ctx.Err() == nil && s.deps.Logger != nil {
				s.deps.Logger.WarnContext(ctx, "expiring actions", "error", err)
			}
			if _, err := s.app.CloseDueSubagents(ctx); err != nil && ctx.Err() == nil && s.deps.Logger != nil {
				s.deps.Logger.WarnContext(ctx, "closing subagents whose wait ended", "error", err)
			}
		}
	}
}
