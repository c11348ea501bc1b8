// Package kit holds what every service is built from: the dependencies the
// composition root hands in, and the interface the binary registers
// services through.
package kit

import (
	"context"
	"golang.org/x/sync/errgroup"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fanout"
	"github.com/agentruntime/agentruntime/pkg/held"
	"github.com/agentruntime/agentruntime/pkg/lease"
	"github.com/agentruntime/agentruntime/pkg/peerauth"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
)

// Deps are a service's dependencies: the event log it appends to and reads
// from, the projection store its read models live in (its own: no other
// service shares it), and telemetry.
type Deps struct {
	Log   *eventlog.Log
	Store projection.Store
	// Redis is set in a deployment (`serve`) for what Redis is best at
	// beyond projections: counters, leases with TTLs. Nil in dev mode,
	// where services use their in-process equivalents. Keys must start with
	// "agentruntime:<service>:", or "agentruntime:held:" for the store of
	// holds every service shares (pkg/held).
	Redis redis.UniversalClient
	// Hub is the process's one fan-out hub over Log (ADR 0006): services
	// that stream events to clients subscribe through it. Nil: a service
	// that needs one makes its own.
	Hub            *fanout.Hub
	Logger         *slog.Logger
	TracerProvider trace.TracerProvider
	// MeterProvider records the service's own metrics (pkg/metrics); nil
	// records none.
	MeterProvider metric.MeterProvider
	// Config is what the binary's flags say beyond the shared ones.
	Config Config
	// Held is the store of what workers hold (pkg/held), which every
	// service of a deployment reads: the composition root hands the
	// services of one process the same one. Nil: Holds decides.
	Held *held.Store
}

// Holds is the store of what workers hold: Deps.Held; else, with Redis,
// the shared keys in Redis (every service and replica sees the same);
// else a store of the service's own, in which no other service records a
// hold (a worker reads nothing that needs one).
func (d Deps) Holds() *held.Store {
	switch {
	case d.Held != nil:
		return d.Held
	case d.Redis != nil:
		return held.New(lease.NewRedis(d.Redis, held.RedisPrefix))
	}
	return held.NewMemory()
}

// Config carries service settings parsed by the binary (flags with AR_*
// environment defaults), so no service reads the environment itself.
type Config struct {
	// ModelsFile is the routing service's model registry YAML (--models,
	// AR_MODELS); empty means an empty registry.
	ModelsFile string
	// MaxQueuedTurns bounds each thread's queue in the control service
	// (--max-queued-turns, AR_MAX_QUEUED_TURNS); 0 means the service's
	// default.
	MaxQueuedTurns int
	// RestrictHookHosts makes the permission service refuse a hook whose
	// target names a host outside HookAllowHosts (--hook-allow-hosts,
	// AR_HOOK_ALLOW_HOSTS: host[:port] patterns, none allowed when empty).
	// The binary always restricts; a composition that does not allows any.
	RestrictHookHosts bool
	HookAllowHosts    []string
	// WebhookKey seals webhook secrets in the control service
	// (--webhook-key-file, AR_WEBHOOK_KEY_FILE; 32 bytes). Nil: webhooks
	// are off. The same HookAllowHosts restrict webhook URLs.
	WebhookKey []byte
	// WebhookRetry overrides the control service's delivery retries (zero:
	// its defaults); tests shorten the backoff.
	WebhookRetry WebhookRetry
	// A2APeers are the host[:port] patterns of the A2A peer agents a
	// subagent may be (--a2a-peers, AR_A2A_PEERS): SpawnSubagent's agent
	// and the interfaces its card names. None: no peer may be called.
	A2APeers []string
	// A2APeerCredentials are the credentials sent to A2A peers, each to
	// the hosts its entry names (--a2a-peer-credentials,
	// AR_A2A_PEER_CREDENTIALS; pkg/peerauth). Nil: none are sent.
	A2APeerCredentials *peerauth.Set
	// A2APeerRetry overrides how the control service tries again to reach
	// a peer at a remote subagent's start (zero: its defaults,
	// app.DefaultPeerRetry); tests shorten it.
	A2APeerRetry A2APeerRetry
}

// A2APeerRetry bounds the attempts to reach an A2A peer at a remote
// subagent's start; zero fields take the control service's defaults.
type A2APeerRetry struct {
	MaxAttempts            int
	MinBackoff, MaxBackoff time.Duration
	MaxElapsed             time.Duration
}

// WebhookRetry bounds webhook delivery attempts; zero fields take the
// control service's defaults.
type WebhookRetry struct {
	MaxAttempts            int
	MinBackoff, MaxBackoff time.Duration
	MaxAge                 time.Duration
	// AttemptTimeout bounds one attempt (default 10 s).
	AttemptTimeout time.Duration
	// A2APushRetention is how long an A2A push notification config is
	// kept after its task ends (default 25 h; never less than MaxAge and
	// an attempt), and A2APushCollectEvery how often ended tasks' configs
	// are looked for (default a minute).
	A2APushRetention, A2APushCollectEvery time.Duration
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

// Runner is a service with background work (projectors, timers): the binary
// calls Run once after registering it and cancels ctx on shutdown. Run
// returns only when ctx ends or on a failure that should stop the process.
type Runner interface {
	Run(ctx context.Context) error
}

// Projector is a service whose Run folds the log into read models in its
// store: Projections are every projection Run runs (the composition root
// builds a new generation of the store from them: docs/upgrading.md).
type Projector interface {
	Projections() []projector.Projection
}

// RunAll runs a service's background loops together under one errgroup:
// the first loop to fail cancels the others and its error is returned once
// they have stopped. When ctx ends (shutdown), the loops' context errors
// are not failures and RunAll returns nil.
func RunAll(ctx context.Context, loops ...func(context.Context) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, loop := range loops {
		g.Go(func() error { return loop(gctx) })
	}
	err := g.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}
