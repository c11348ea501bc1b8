// Package app runs the tasks service's commands and queries: it loads
// records from the read model, asks the domain to decide, appends through
// the shared write path (command.Executor) and answers with the sequence
// reached. Background work (projector, dependency reactor, lease and
// timeout sweeper) is in run.go.
package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	proj "github.com/agentruntime/agentruntime/services/tasks/projector"
)

// Leases hold worker leases on tasks: one holder (token: the run id) per
// key, expiring unless renewed. adapters.RedisLeases in a deployment,
// adapters.MemoryLeases in dev mode.
type Leases interface {
	Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
	Renew(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
	Release(ctx context.Context, key, token string) error
	Holder(ctx context.Context, key string) (string, bool, error)
}

// Config tunes the background work; zero values take the defaults.
type Config struct {
	// DefaultLeaseTTL for polls that name none; default 30s.
	DefaultLeaseTTL time.Duration
	// SweepInterval between lease and timeout sweeps; default 1s.
	SweepInterval time.Duration
	// CatchUp bounds waits for the read model; default 5s.
	CatchUp time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// App is the tasks service's use cases.
type App struct {
	log     *eventlog.Log
	store   projection.Store
	exec    command.Executor
	leases  Leases
	cfg     Config
	logger  *slog.Logger
	records proj.Records
	// warm: the read model has once applied every task and job event that
	// was in the log (after a start, it rebuilds from its checkpoint).
	warm atomic.Bool
}

// New builds the app.
func New(log *eventlog.Log, store projection.Store, leases Leases, logger *slog.Logger, cfg Config) *App {
	if cfg.DefaultLeaseTTL <= 0 {
		cfg.DefaultLeaseTTL = 30 * time.Second
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = time.Second
	}
	if cfg.CatchUp <= 0 {
		cfg.CatchUp = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &App{
		log: log, store: store, leases: leases, cfg: cfg, logger: logger,
		exec:    command.Executor{Log: log, Store: store, Projection: proj.Name, CatchUp: cfg.CatchUp},
		records: proj.Records{Subjects: log.Subjects},
	}
}

// Result of a command: the consistency token, and whether nothing was
// appended because the command had already been applied.
type Result struct {
	Sequence     uint64
	EventIDs     []string
	Deduplicated bool
}

func (a *App) now() time.Time { return a.cfg.Now().UTC() }

func taskAgg(tenant string, t *tasksv1.Task) eventlog.Aggregate {
	return eventlog.Aggregate{Tenant: tenant, Session: session(t.GetSessionId()), Kind: "task", ID: t.GetTaskId()}
}

func jobAgg(tenant string, j *tasksv1.Job) eventlog.Aggregate {
	return eventlog.Aggregate{Tenant: tenant, Session: session(j.GetSessionId()), Kind: "job", ID: j.GetJobId()}
}

func session(s string) string {
	if s == "" {
		return eventlog.NoSession
	}
	return s
}

// catchUp waits until the read model has applied every task and job event
// that is in the log now. A "not found" is only answered after it: a
// record missing from a read model that is still rebuilding (after a
// restart) or behind is not missing.
func (a *App) catchUp(ctx context.Context) error {
	cp, err := a.store.Checkpoint(ctx, proj.Name)
	if err != nil {
		return err
	}
	last, err := a.log.Read(ctx, a.records.Filters(), eventlog.FromSequence(cp+1), func(*eventlog.Record) error { return nil })
	if err != nil {
		return err
	}
	if last > cp {
		if _, err := projector.WaitFor(ctx, a.store, proj.Name, last, a.cfg.CatchUp); err != nil {
			return err
		}
	}
	a.warm.Store(true)
	return nil
}

// ensureWarm catches up once after start, so listings and polls do not
// answer from a half-rebuilt read model.
func (a *App) ensureWarm(ctx context.Context) error {
	if a.warm.Load() {
		return nil
	}
	return a.catchUp(ctx)
}

// LoadTask reads a task of the tenant; another tenant's task is not found.
func (a *App) LoadTask(ctx context.Context, tenant, id string) (*tasksv1.Task, error) {
	t, err := a.loadTask(ctx, tenant, id)
	if fault.Is(err, fault.KindNotFound) {
		if err := a.catchUp(ctx); err != nil {
			return nil, err
		}
		return a.loadTask(ctx, tenant, id)
	}
	return t, err
}

// loadTask reads without catching up: inside a decision, where the
// executor already waited for the aggregate's own last event.
func (a *App) loadTask(ctx context.Context, tenant, id string) (*tasksv1.Task, error) {
	t, err := proj.LoadTask(ctx, a.store, tenant, id)
	if errors.Is(err, projection.ErrNotFound) {
		return nil, fault.NotFound("task", id)
	}
	return t, err
}

// LoadJob reads a job of the tenant.
func (a *App) LoadJob(ctx context.Context, tenant, id string) (*tasksv1.Job, error) {
	j, err := a.loadJob(ctx, tenant, id)
	if fault.Is(err, fault.KindNotFound) {
		if err := a.catchUp(ctx); err != nil {
			return nil, err
		}
		return a.loadJob(ctx, tenant, id)
	}
	return j, err
}

func (a *App) loadJob(ctx context.Context, tenant, id string) (*tasksv1.Job, error) {
	j, err := proj.LoadJob(ctx, a.store, tenant, id)
	if errors.Is(err, projection.ErrNotFound) {
		return nil, fault.NotFound("job", id)
	}
	return j, err
}

// stampIDs gives a command's events ids derived from its idempotency key
// (so a retry on any replica appends nothing twice: the log de-duplicates
// by event id) and records the key on each.
func stampIDs(evs []*eventsv1.RuntimeEvent, scope, key string) {
	if key == "" {
		return
	}
	for i, ev := range evs {
		ev.RequestId = key
		ev.EventId = derivedID(scope, key, fmt.Sprint(i))
	}
}

func derivedID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return ids.Event + "_" + hex.EncodeToString(h.Sum(nil))[:40]
}

// execute runs decide on an aggregate through the write path, then waits
// until the read model has applied the result, so the caller's next
// command or read (on any replica) sees it.
func (a *App) execute(ctx context.Context, agg eventlog.Aggregate, idemKey string, decide func(ctx context.Context) ([]*eventsv1.RuntimeEvent, error)) (Result, error) {
	dedup := false
	res, err := a.exec.Execute(ctx, agg, func(ctx context.Context, _ uint64) ([]*eventsv1.RuntimeEvent, error) {
		dedup = false
		if idemKey != "" {
			_, err := a.store.Get(ctx, proj.IdemKey(agg.Tenant, agg.Kind, agg.ID, idemKey))
			if err == nil {
				dedup = true
				return nil, nil
			}
			if !errors.Is(err, projection.ErrNotFound) {
				return nil, err
			}
		}
		evs, err := decide(ctx)
		if err != nil {
			return nil, err
		}
		stampIDs(evs, agg.String(), idemKey)
		return evs, nil
	})
	if err != nil {
		return Result{}, err
	}
	out := Result{Sequence: res.Sequence, Deduplicated: dedup || len(res.Appended) == 0}
	for _, ap := range res.Appended {
		out.EventIDs = append(out.EventIDs, ap.EventID)
		if !ap.Duplicate {
			out.Deduplicated = false
		}
	}
	if _, err := projector.WaitFor(ctx, a.store, proj.Name, res.Sequence, a.cfg.CatchUp); err != nil {
		return out, err
	}
	return out, nil
}

// onTask runs a decision on an existing task of the tenant.
func (a *App) onTask(ctx context.Context, tenant, taskID, idemKey string, decide func(ctx context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error)) (Result, error) {
	if err := a.ensureWarm(ctx); err != nil {
		return Result{}, err
	}
	t, err := a.LoadTask(ctx, tenant, taskID)
	if err != nil {
		return Result{}, err
	}
	return a.execute(ctx, taskAgg(tenant, t), idemKey, func(ctx context.Context) ([]*eventsv1.RuntimeEvent, error) {
		// Re-read: the executor waited until the read model holds the
		// aggregate's latest event.
		t, err := a.loadTask(ctx, tenant, taskID)
		if err != nil {
			return nil, err
		}
		return decide(ctx, t)
	})
}

// onJob runs a decision on an existing job of the tenant.
func (a *App) onJob(ctx context.Context, tenant, jobID, idemKey string, decide func(ctx context.Context, j *tasksv1.Job) ([]*eventsv1.RuntimeEvent, error)) (Result, error) {
	if err := a.ensureWarm(ctx); err != nil {
		return Result{}, err
	}
	j, err := a.LoadJob(ctx, tenant, jobID)
	if err != nil {
		return Result{}, err
	}
	return a.execute(ctx, jobAgg(tenant, j), idemKey, func(ctx context.Context) ([]*eventsv1.RuntimeEvent, error) {
		j, err := a.loadJob(ctx, tenant, jobID)
		if err != nil {
			return nil, err
		}
		return decide(ctx, j)
	})
}

// LeaseKey is the worker lease of a task's current run.
func LeaseKey(tenant, taskID string) string { return tenant + ":" + taskID }
