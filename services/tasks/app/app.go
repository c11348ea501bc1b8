// Package app runs the tasks service's commands and queries. A command
// decides on the task or job as this process's writer holds it
// (command.Writer: the aggregate folded from its own subject by the read
// model's own projection, docs/adr/0005-hot-path.md), appends with the
// expected subject sequence and answers from the decision: the sequence
// reached and the record after its events. No command waits for the read
// model. Reads wait for it up to the min_sequence they are given.
// Background work (projector, dependency reactor, lease and timeout
// sweeper) is in run.go.
package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fairshare"
	"github.com/agentruntime/agentruntime/pkg/fault"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/lease"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/tasks/readmodel"
)

// Config tunes the background work; zero values take the defaults.
type Config struct {
	// DefaultLeaseTTL for polls that name none; default 30s.
	DefaultLeaseTTL time.Duration
	// SweepInterval between lease and timeout sweeps; default 1s.
	SweepInterval time.Duration
	// CatchUp bounds waits for the read model; default 5s.
	CatchUp time.Duration
	// PollNap is the longest a PollTask sleeps between looks at the
	// runnable index while the read model does not move (a backoff that
	// ends is noticed then); default 1s.
	PollNap time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// App is the tasks service's use cases.
type App struct {
	log     *eventlog.Log
	store   projection.Store
	w       *command.Writer
	where   *locator
	leases  lease.Store
	cfg     Config
	logger  *slog.Logger
	records readmodel.Records
	// warm: the read model has once applied every task and job event that
	// was in the log (after a start, it rebuilds from its checkpoint).
	warm atomic.Bool
	// fair decides a created task's place in its fair queue.
	fair fairshare.Tagger
}

// New builds the app.
func New(log *eventlog.Log, store projection.Store, leases lease.Store, logger *slog.Logger, cfg Config) *App {
	if cfg.DefaultLeaseTTL <= 0 {
		cfg.DefaultLeaseTTL = 30 * time.Second
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = time.Second
	}
	if cfg.CatchUp <= 0 {
		cfg.CatchUp = 5 * time.Second
	}
	if cfg.PollNap <= 0 {
		cfg.PollNap = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &App{
		log: log, store: store, leases: leases, cfg: cfg, logger: logger,
		w:       command.NewWriter(log, readmodel.Records{Subjects: log.Subjects}, command.Options{}),
		where:   newLocator(locatorSize),
		records: readmodel.Records{Subjects: log.Subjects},
		fair:    fairshare.Tagger{Queue: readmodel.TaskQueue},
	}
}

// Result of a command: what it wrote as the API answers it (the
// consistency token, the event ids, whether it changed nothing new) and
// the aggregate after the command's events (the answer is read from it).
type Result struct {
	Write *commonv1.WriteResult
	state command.State
}

// Proto is the write as the API answers it, empty when there was none (a
// poll that found no task).
func (r Result) Proto() *commonv1.WriteResult {
	if r.Write == nil {
		return &commonv1.WriteResult{}
	}
	return r.Write
}

// task reads a task from the command's aggregate state.
func (r Result) task(ctx context.Context, tenant, id string) (*tasksv1.Task, error) {
	return taskIn(ctx, r.state, tenant, id)
}

// job reads a job from the command's aggregate state.
func (r Result) job(ctx context.Context, tenant, id string) (*tasksv1.Job, error) {
	return jobIn(ctx, r.state, tenant, id)
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

// taskIn reads a task from an aggregate's state as the writer holds it: a
// task it lacks does not exist at that state.
func taskIn(ctx context.Context, st projection.Store, tenant, id string) (*tasksv1.Task, error) {
	t, err := readmodel.LoadTask(ctx, st, tenant, id)
	if errors.Is(err, projection.ErrNotFound) {
		return nil, fault.NotFound("task", id)
	}
	return t, err
}

// jobIn reads a job from an aggregate's state as the writer holds it.
func jobIn(ctx context.Context, st projection.Store, tenant, id string) (*tasksv1.Job, error) {
	j, err := readmodel.LoadJob(ctx, st, tenant, id)
	if errors.Is(err, projection.ErrNotFound) {
		return nil, fault.NotFound("job", id)
	}
	return j, err
}

// catchUp waits until the read model has applied every task and job event
// that is in the log now, in every partition. A "not found" is only
// answered after it: a record missing from a read model that is still
// rebuilding (after a restart) or behind is not missing.
func (a *App) catchUp(ctx context.Context) error {
	if err := projector.CaughtUp(ctx, a.log, a.store, readmodel.Name, a.records.Filters(), a.cfg.CatchUp); err != nil {
		return err
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

// LoadTask reads a task of the tenant from the read model; another
// tenant's task is not found. Commands do not decide on it (they decide on
// the writer's state); queries, the poll's candidates and the reactor read
// it.
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

// loadTask reads the read model without catching up.
func (a *App) loadTask(ctx context.Context, tenant, id string) (*tasksv1.Task, error) {
	return taskIn(ctx, a.store, tenant, id)
}

// LoadJob reads a job of the tenant from the read model.
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
	return jobIn(ctx, a.store, tenant, id)
}

// locatorSize bounds the ids whose session an app remembers.
const locatorSize = 1 << 16

// locator remembers the session of tasks and jobs: an aggregate's subject
// names its session, so a command on an id must know it. A session never
// changes, so an entry is never stale. It forgets everything when full; a
// miss reads the read model, where a record's session is the same at any
// sequence (and a record not there yet is waited for, as a read by id is).
type locator struct {
	mu  sync.Mutex
	max int
	m   map[string]string
}

func newLocator(max int) *locator { return &locator{max: max, m: make(map[string]string)} }

func (l *locator) get(agg eventlog.Aggregate) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.m[locatorKey(agg)]
	return s, ok
}

func (l *locator) put(agg eventlog.Aggregate) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.m) >= l.max {
		clear(l.m)
	}
	l.m[locatorKey(agg)] = agg.Session
}

func locatorKey(agg eventlog.Aggregate) string { return agg.Tenant + "/" + agg.Kind + "/" + agg.ID }

// aggregate finds the aggregate of an existing task or job of the tenant.
func (a *App) aggregate(ctx context.Context, tenant, kind, id string) (eventlog.Aggregate, error) {
	agg := eventlog.Aggregate{Tenant: tenant, Kind: kind, ID: id}
	if s, ok := a.where.get(agg); ok {
		agg.Session = s
		return agg, nil
	}
	agg, err := a.locate(ctx, tenant, kind, id, true)
	if err != nil {
		return agg, err
	}
	a.where.put(agg)
	return agg, nil
}

// known is the aggregate of a task or job id already in use, when this
// process or its read model knows it (not waiting for the read model): a
// create with an id taken in another session decides on that aggregate.
func (a *App) known(ctx context.Context, tenant, kind, id string) (eventlog.Aggregate, bool, error) {
	agg := eventlog.Aggregate{Tenant: tenant, Kind: kind, ID: id}
	if s, ok := a.where.get(agg); ok {
		agg.Session = s
		return agg, true, nil
	}
	agg, err := a.locate(ctx, tenant, kind, id, false)
	if fault.Is(err, fault.KindNotFound) {
		return agg, false, nil
	}
	return agg, err == nil, err
}

// locate reads a task's or job's aggregate from the read model, caught up
// to the log first when wait is set.
func (a *App) locate(ctx context.Context, tenant, kind, id string, wait bool) (eventlog.Aggregate, error) {
	if kind == "task" {
		load := a.loadTask
		if wait {
			load = a.LoadTask
		}
		t, err := load(ctx, tenant, id)
		if err != nil {
			return eventlog.Aggregate{Tenant: tenant, Kind: kind, ID: id}, err
		}
		return taskAgg(tenant, t), nil
	}
	load := a.loadJob
	if wait {
		load = a.LoadJob
	}
	j, err := load(ctx, tenant, id)
	if err != nil {
		return eventlog.Aggregate{Tenant: tenant, Kind: kind, ID: id}, err
	}
	return jobAgg(tenant, j), nil
}

// current reads a task as the log holds it now: the writer catches its
// entry up from the task's own subject (one batch get when it is warm).
// Commands take inputs from other aggregates with it (a parent's
// cancellation intent, a blocker's status, the run a heartbeat names);
// they are inputs, not invariants of the aggregate written. Never called
// inside a decision (it takes the other aggregate's entry).
func (a *App) current(ctx context.Context, tenant, id string) (*tasksv1.Task, error) {
	agg, err := a.aggregate(ctx, tenant, "task", id)
	if err != nil {
		return nil, err
	}
	st, err := a.w.Refresh(ctx, agg)
	if err != nil {
		return nil, err
	}
	return taskIn(ctx, st, tenant, id)
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

// execute runs decide on an aggregate's state as the writer holds it and
// appends at its expected sequence (a conflict: another replica wrote;
// the writer catches up from the log and decides again). It answers from
// the decision: no read model is waited for. A command with an
// idempotency key already applied (the key is folded into the aggregate)
// appends nothing.
func (a *App) execute(ctx context.Context, agg eventlog.Aggregate, idemKey string, decide func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error)) (Result, error) {
	return a.run(ctx, a.w.Execute, agg, idemKey, decide)
}

// create is execute for a command that creates its aggregate under an id
// not known to be in use: it decides on the empty state without reading
// the log first (command.Writer.ExecuteNew; an aggregate that existed
// after all conflicts and is decided again on what is there).
func (a *App) create(ctx context.Context, agg eventlog.Aggregate, decide func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error)) (Result, error) {
	return a.run(ctx, a.w.ExecuteNew, agg, "", decide)
}

// createOn says where a create decides: a new aggregate on the empty state
// (create), unless the caller named the id or gave an idempotency key and
// that id is already in use, in any session: then it is that aggregate,
// decided on its state (ALREADY_EXISTS, or the first create for the same
// key).
func (a *App) createOn(ctx context.Context, tenant, kind, id string, agg eventlog.Aggregate, named bool) (eventlog.Aggregate, func(context.Context, eventlog.Aggregate, func(context.Context, command.State) ([]*eventsv1.RuntimeEvent, error)) (Result, error), error) {
	if !named {
		return agg, a.create, nil
	}
	other, ok, err := a.known(ctx, tenant, kind, id)
	if err != nil || !ok {
		return agg, a.create, err
	}
	return other, func(ctx context.Context, agg eventlog.Aggregate, decide func(context.Context, command.State) ([]*eventsv1.RuntimeEvent, error)) (Result, error) {
		return a.execute(ctx, agg, "", decide)
	}, nil
}

func (a *App) run(ctx context.Context, exec func(context.Context, eventlog.Aggregate, command.Key, command.Decide) (command.Result, error),
	agg eventlog.Aggregate, idemKey string, decide func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error)) (Result, error) {
	res, err := exec(ctx, agg, "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		if idemKey != "" {
			// A retry under the same idempotency key appends nothing.
			_, err := st.Get(ctx, readmodel.IdemKey(agg.Tenant, agg.Kind, agg.ID, idemKey))
			if err == nil {
				return nil, nil
			}
			if !errors.Is(err, projection.ErrNotFound) {
				return nil, err
			}
		}
		evs, err := decide(ctx, st)
		if err != nil {
			return nil, err
		}
		stampIDs(evs, agg.String(), idemKey)
		return evs, nil
	})
	if err != nil {
		return Result{}, err
	}
	out := Result{Write: res.Write(), state: res.State}
	if res.State.Last > 0 {
		a.where.put(agg)
	}
	return out, nil
}

// onTask runs a decision on an existing task of the tenant.
func (a *App) onTask(ctx context.Context, tenant, taskID, idemKey string, decide func(ctx context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error)) (Result, error) {
	agg, err := a.aggregate(ctx, tenant, "task", taskID)
	if err != nil {
		return Result{}, err
	}
	return a.execute(ctx, agg, idemKey, func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		t, err := taskIn(ctx, st, tenant, taskID)
		if err != nil {
			return nil, err
		}
		return decide(ctx, t)
	})
}

// onJob runs a decision on an existing job of the tenant.
func (a *App) onJob(ctx context.Context, tenant, jobID, idemKey string, decide func(ctx context.Context, j *tasksv1.Job) ([]*eventsv1.RuntimeEvent, error)) (Result, error) {
	agg, err := a.aggregate(ctx, tenant, "job", jobID)
	if err != nil {
		return Result{}, err
	}
	return a.execute(ctx, agg, idemKey, func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		j, err := jobIn(ctx, st, tenant, jobID)
		if err != nil {
			return nil, err
		}
		return decide(ctx, j)
	})
}

// LeaseKey is the worker lease of a task's current run.
func LeaseKey(tenant, taskID string) string { return tenant + ":" + taskID }
