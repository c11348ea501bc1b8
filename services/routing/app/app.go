// Package app runs the routing service's commands. A command decides on
// its aggregate (a turn's routing, a tenant's registry) as this process's
// writer holds it (command.Writer: the aggregate's own subject folded by
// the read model's own fold), with counters from the limit store and
// cross-aggregate inputs (spend, a task's profile) read where they live,
// appends at the expected subject sequence and answers from the decision:
// no command waits for the read model (docs/architecture.md, "The write
// path"; docs/adr/0005-hot-path.md). Reads wait for min_sequence.
package app

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/routing/domain"
	"github.com/agentruntime/agentruntime/services/routing/readmodel"
)

// Limiter is the limit store (adapters.Redis, adapters.Memory).
type Limiter interface {
	Apply(ctx context.Context, tenant string, req domain.LimitRequest) (domain.LimitResult, error)
}

// App is the routing service's use cases.
type App struct {
	log    *eventlog.Log
	store  projection.Store
	w      *command.Writer
	limits Limiter
	now    func() time.Time
	// config is the --models registry (nil: none); each tenant imports it
	// once per digest, as a limit.changed fact.
	config *eventsv1.Registry
	seeded sync.Map // tenant -> imported
	// held is each tenant's registry as this process last knew it (the
	// read model, or its own write): limits are then one Redis round trip
	// (the script), not two.
	held registries
}

// imported is a tenant's import of the config file: its digest and the
// sequence the registry reached with it (a read waits for it).
type imported struct {
	digest   string
	sequence uint64
}

// New builds the use cases.
func New(log *eventlog.Log, store projection.Store, limits Limiter, config *eventsv1.Registry) *App {
	return &App{log: log, store: store, limits: limits, now: time.Now, config: config,
		w:    command.NewWriter(log, readmodel.Projection{Subjects: log.Subjects}, command.Options{}),
		held: registries{byTenant: map[string]*eventsv1.Registry{}, gen: map[string]uint64{}}}
}

// Instrument records the command path's metrics (conflict retries) on mp.
func (a *App) Instrument(mp metric.MeterProvider) error { return a.w.Instrument(mp) }

// Applied is told by the routing projector after each batch is in the
// store (projector.WithAfterBatch): a tenant whose registry changed in it
// (on any replica) is read again from the read model on its next call.
func (a *App) Applied(batch []*eventlog.Record, _ uint64) {
	for _, rec := range batch {
		if rec.Event.GetLimitChanged() != nil {
			a.held.forget(rec.Event.GetTenantId())
		}
	}
}

// readTimeout bounds how long a read waits for min_sequence.
const readTimeout = 5 * time.Second

func turnAgg(tenant string, s *rv1.TurnScope) eventlog.Aggregate {
	return eventlog.Aggregate{Tenant: tenant, Session: s.GetSessionId(), Kind: readmodel.KindTurn, ID: s.GetTurnId()}
}

func registryAgg(tenant string) eventlog.Aggregate {
	return eventlog.Aggregate{Tenant: tenant, Session: eventlog.NoSession, Kind: readmodel.KindRegistry, ID: readmodel.RegistryID}
}

func taskAgg(tenant, session, task string) eventlog.Aggregate {
	agg := eventlog.Aggregate{Tenant: tenant, Session: session, Kind: readmodel.KindTask, ID: task}
	if agg.Session == "" {
		agg.Session = eventlog.NoSession
	}
	return agg
}

// A turn's routing aggregate is usually created by its first decision (a
// worker routes each turn once, at its start), so ResolveCandidates and
// DecideRoute take a turn this process does not hold for new
// (command.Writer.ExecuteNew): the common first decision costs its append
// only; a turn routed or profiled before, elsewhere, costs one conflict
// and one read, then is decided again on what is there.
