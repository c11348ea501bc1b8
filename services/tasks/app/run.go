package app

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/tasks/domain"
	"github.com/agentruntime/agentruntime/services/tasks/readmodel"
)

// ReactorName keys the dependency reactor's checkpoint in the store.
const ReactorName = "tasks.reactor"

// Projections are the read models Run folds.
func (a *App) Projections() []projector.Projection {
	return []projector.Projection{a.records, readmodel.TurnEnds{Subjects: a.log.Subjects}}
}

// Run runs the background work until ctx ends: the records projector, the
// turn-ends projector, the dependency reactor, the settler of runs carried
// by turns (delegate.go) and the lease and timeout sweeper. Every replica may
// run all three: the projector's Apply skips what another replica applied,
// and the reactor's and sweeper's writes go through the expected-sequence
// write path with decisions that append nothing once the fact is there.
func (a *App) Run(ctx context.Context) error {
	return kit.RunAll(ctx,
		func(ctx context.Context) error { return projector.Run(ctx, a.log, a.store, a.records, a.logger) },
		func(ctx context.Context) error {
			return projector.Run(ctx, a.log, a.store, readmodel.TurnEnds{Subjects: a.log.Subjects}, a.logger)
		},
		a.react,
		a.settle,
		a.sweep,
	)
}

// react follows task events and writes their consequences on other
// aggregates: dependents learn a blocker's outcome (task.dependency.updated,
// unblocking them), cancellation propagates to children and jobs, a
// parent records its delegations (task.delegated). It resumes from its
// checkpoint; a consequence written twice (a crash before the checkpoint,
// or two replicas) is absorbed: decisions append nothing once the fact is
// there, and derived event ids let the log drop duplicates.
//
// A consequence joins two tasks that may be in different partitions of
// the log, folded independently (docs/partitions.md XR-1, XR-2): a
// dependent created while its blocker ends, a child (or a job) created
// while its parent's cancellation is recorded. Each side reacts: the
// dependent's (child's, job's) side reads the other task through the
// writer, as the log holds it now; the blocker's (parent's) side, before
// listing its dependents (children, jobs) in the read model, waits until
// the read model holds every partition's events up to now
// (allPartitions). Either the dependent was appended before that wait
// began, and is listed, or after, and then after the blocker's event,
// which its own reaction reads.
func (a *App) react(ctx context.Context) error {
	return projector.React(ctx, a.log, a.store, taskReactor{a}, a.logger)
}

// taskReactor is the projector.Reactor of task consequences.
type taskReactor struct{ a *App }

func (taskReactor) Name() string { return ReactorName }
func (r taskReactor) Filters() []string {
	return []string{r.a.log.Subjects.Kind("*", "task"), r.a.log.Subjects.Kind("*", "job")}
}
func (taskReactor) Wants(ev *eventsv1.RuntimeEvent) bool { return hasConsequences(ev) }

// hasConsequences: the events reactTo acts on. The others (queued,
// attempts, progress...) are not waited for nor checkpointed: half of a
// task's lifecycle costs the reactor nothing.
func hasConsequences(ev *eventsv1.RuntimeEvent) bool {
	switch ev.GetType() {
	case domain.TypeTaskCompleted, domain.TypeTaskFailed, domain.TypeTaskCancelled, domain.TypeTaskTimedOut,
		domain.TypeTaskLost, domain.TypeTaskRetrying, domain.TypeTaskStarted:
		return true
	case domain.TypeTaskDependencyUpdated:
		e := ev.GetTaskDependencyUpdated().GetEdge()
		return e.GetRelation() == tasksv1.EdgeRelation_EDGE_RELATION_BLOCKED_BY && e.GetStatus() != tasksv1.EdgeStatus_EDGE_STATUS_REMOVED
	case domain.TypeTaskCancelRequested:
		return ev.GetTaskCancelRequested().GetPropagate()
	case domain.TypeTaskCreated:
		t := ev.GetTaskCreated().GetTask()
		if t.GetParentTaskId() != "" {
			return true
		}
		for _, e := range t.GetEdges() {
			if e.GetRelation() == tasksv1.EdgeRelation_EDGE_RELATION_BLOCKED_BY && e.GetStatus() != tasksv1.EdgeStatus_EDGE_STATUS_SATISFIED {
				return true
			}
		}
	case domain.TypeJobCreated:
		return ev.GetJobCreated().GetJob().GetTaskId() != ""
	}
	return false
}

func (r taskReactor) React(ctx context.Context, rec *eventlog.Record) error {
	// Decide on a read model that holds this event and all before it.
	if _, err := projector.WaitFor(ctx, r.a.log, r.a.store, readmodel.Name, rec.Event.GetSequence(), time.Minute); err != nil {
		return err
	}
	return r.a.reactTo(ctx, rec.Event)
}

func (a *App) reactTo(ctx context.Context, ev *eventsv1.RuntimeEvent) error {
	tenant, taskID := ev.GetTenantId(), ev.GetTaskId()
	switch ev.GetType() {
	case domain.TypeTaskCompleted, domain.TypeTaskFailed, domain.TypeTaskCancelled, domain.TypeTaskTimedOut,
		domain.TypeTaskLost, domain.TypeTaskRetrying, domain.TypeTaskStarted:
		return a.resolveDependents(ctx, ev)
	case domain.TypeTaskDependencyUpdated:
		// A BLOCKED_BY edge added after its blocker already moved on: the
		// blocker's own event was handled before the edge existed.
		e := ev.GetTaskDependencyUpdated().GetEdge()
		if e.GetRelation() != tasksv1.EdgeRelation_EDGE_RELATION_BLOCKED_BY || e.GetStatus() == tasksv1.EdgeStatus_EDGE_STATUS_REMOVED {
			return nil
		}
		blocker, err := a.current(ctx, tenant, e.GetTargetId())
		if err != nil {
			return ignoreGone(err)
		}
		return a.resolve(ctx, ev, tenant, taskID, blocker)
	case domain.TypeTaskCancelRequested:
		if !ev.GetTaskCancelRequested().GetPropagate() {
			return nil
		}
		return a.propagateCancel(ctx, ev)
	case domain.TypeTaskCreated:
		t := ev.GetTaskCreated().GetTask()
		// A blocker read by the create may have moved on before the task
		// was appended: its own event was handled before this task's edge
		// existed. It is read as the log holds it now: it may be of
		// another partition, which the read model folds at its own pace.
		for _, e := range t.GetEdges() {
			if e.GetRelation() != tasksv1.EdgeRelation_EDGE_RELATION_BLOCKED_BY || e.GetStatus() == tasksv1.EdgeStatus_EDGE_STATUS_SATISFIED {
				continue
			}
			blocker, err := a.current(ctx, tenant, e.GetTargetId())
			if err != nil {
				if ignoreGone(err) == nil {
					continue
				}
				return err
			}
			if err := a.resolve(ctx, ev, tenant, taskID, blocker); err != nil {
				return err
			}
		}
		if t.GetParentTaskId() == "" {
			return nil
		}
		parent, err := a.current(ctx, tenant, t.GetParentTaskId())
		if err != nil {
			return ignoreGone(err)
		}
		if _, err := a.reactOn(ctx, ev, tenant, parent.GetTaskId(), func(p *tasksv1.Task) []*eventsv1.RuntimeEvent {
			return []*eventsv1.RuntimeEvent{domain.Delegated(p, tasksv1.EdgeRelation_EDGE_RELATION_CHILD, "task", taskID, "child task created", a.now())}
		}); err != nil {
			return err
		}
		if parent.GetCancelRequested() {
			// The child slipped in while the parent's cancellation was
			// being recorded: cancellation sticks to the graph.
			return a.cancelChild(ctx, ev, tenant, taskID, parent.GetTaskId())
		}
	case domain.TypeJobCreated:
		// The same for a job working for a task: created while the task's
		// cancellation was being recorded, it is cancelled with the task.
		j := ev.GetJobCreated().GetJob()
		t, err := a.current(ctx, tenant, j.GetTaskId())
		if err != nil {
			return ignoreGone(err)
		}
		if t.GetCancelRequested() {
			return a.cancelJob(ctx, ev, tenant, j.GetJobId(), t.GetTaskId())
		}
	}
	return nil
}

// allPartitions waits until the read model holds every task and job event
// appended to any partition before the call: the blocker's (parent's)
// side of a consequence across sessions, before it lists its dependents
// (children, jobs). With one partition the wait for the reacted event
// already covered every event before it.
func (a *App) allPartitions(ctx context.Context) error {
	if a.log.Partitions() <= 1 {
		return nil
	}
	return projector.CaughtUp(ctx, a.log, a.store, readmodel.Name, a.records.Filters(), time.Minute)
}

func ignoreGone(err error) error {
	if fault.Is(err, fault.KindNotFound) {
		return nil
	}
	return err
}

// resolveDependents updates every task blocked by the event's task.
func (a *App) resolveDependents(ctx context.Context, ev *eventsv1.RuntimeEvent) error {
	tenant := ev.GetTenantId()
	blocker, err := a.LoadTask(ctx, tenant, ev.GetTaskId())
	if err != nil {
		return ignoreGone(err)
	}
	if err := a.allPartitions(ctx); err != nil {
		return err
	}
	entries, err := a.store.Range(ctx, readmodel.Reverse(tenant, blocker.GetTaskId()), projection.RangeQuery{})
	if err != nil {
		return err
	}
	var deps []string
	for _, e := range entries {
		if rel, src := readmodel.SplitReverse(e.Member); rel == tasksv1.EdgeRelation_EDGE_RELATION_BLOCKED_BY {
			deps = append(deps, src)
		}
	}
	return parallel(ctx, deps, func(ctx context.Context, dep string) error {
		return a.resolve(ctx, ev, tenant, dep, blocker)
	})
}

// resolve updates dependent's edge to blocker. Its facts' ids are derived
// from the blocker too: a task's creation can resolve several blockers,
// and the updates of one cause on one task would otherwise share ids, the
// log keeping the first and dropping the others as its duplicates.
func (a *App) resolve(ctx context.Context, cause *eventsv1.RuntimeEvent, tenant, dependent string, blocker *tasksv1.Task) error {
	_, err := a.reactOnAs(ctx, cause, tenant, dependent, dependent+"/blocked_by/"+blocker.GetTaskId(), func(t *tasksv1.Task) []*eventsv1.RuntimeEvent {
		return domain.DecideDependency(t, blocker.GetTaskId(), domain.BlockerStatus(blocker), a.now())
	})
	return err
}

func (a *App) propagateCancel(ctx context.Context, ev *eventsv1.RuntimeEvent) error {
	tenant, parent := ev.GetTenantId(), ev.GetTaskId()
	if err := a.allPartitions(ctx); err != nil {
		return err
	}
	children, err := a.store.Range(ctx, readmodel.TasksByParent(tenant, parent), projection.RangeQuery{})
	if err != nil {
		return err
	}
	ids := make([]string, len(children))
	for i, c := range children {
		ids[i] = c.Member
	}
	if err := parallel(ctx, ids, func(ctx context.Context, child string) error {
		return a.cancelChild(ctx, ev, tenant, child, parent)
	}); err != nil {
		return err
	}
	jobs, err := a.store.Range(ctx, readmodel.JobsByTask(tenant, parent), projection.RangeQuery{})
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if err := a.cancelJob(ctx, ev, tenant, j.Member, parent); err != nil {
			return err
		}
	}
	return nil
}

func (a *App) cancelJob(ctx context.Context, cause *eventsv1.RuntimeEvent, tenant, jobID, task string) error {
	_, err := a.onJob(ctx, tenant, jobID, "", func(_ context.Context, job *tasksv1.Job) ([]*eventsv1.RuntimeEvent, error) {
		evs, err := domain.DecideCancelJob(job, "task "+task+" cancelled", a.now())
		if fault.Is(err, fault.KindPrecondition) {
			return nil, nil // already ended: nothing to cancel
		}
		derive(evs, cause, jobID)
		return evs, err
	})
	return ignoreGone(err)
}

func (a *App) cancelChild(ctx context.Context, cause *eventsv1.RuntimeEvent, tenant, child, parent string) error {
	_, err := a.reactOn(ctx, cause, tenant, child, func(t *tasksv1.Task) []*eventsv1.RuntimeEvent {
		if t.GetCancelRequested() || domain.IsTerminal(t.GetStatus()) {
			return nil
		}
		evs, err := domain.DecideCancel(t, domain.Cancel{Reason: "parent task " + parent + " cancelled", RequestedBy: "task:" + parent, Propagate: true, Now: a.now()})
		if err != nil {
			return nil
		}
		return evs
	})
	return err
}

// reactOn writes a reaction on a task through the write path, with event
// ids derived from the causing event so a replayed reaction is dropped.
func (a *App) reactOn(ctx context.Context, cause *eventsv1.RuntimeEvent, tenant, taskID string, decide func(*tasksv1.Task) []*eventsv1.RuntimeEvent) (Result, error) {
	return a.reactOnAs(ctx, cause, tenant, taskID, taskID, decide)
}

// reactOnAs is reactOn with the ids derived from key as well: one cause
// reacting more than once on a task names each reaction.
func (a *App) reactOnAs(ctx context.Context, cause *eventsv1.RuntimeEvent, tenant, taskID, key string, decide func(*tasksv1.Task) []*eventsv1.RuntimeEvent) (Result, error) {
	// Most reactions are no-ops (a started blocker changes no edge): decide
	// on the current record first and skip the write path's round trips
	// when there is nothing to write. The write path decides again.
	if t, err := a.loadTask(ctx, tenant, taskID); err == nil && len(decide(t)) == 0 {
		return Result{}, nil
	}
	res, err := a.onTask(ctx, tenant, taskID, "", func(_ context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
		evs := decide(t)
		derive(evs, cause, key)
		return evs, nil
	})
	return res, ignoreGone(err)
}

func derive(evs []*eventsv1.RuntimeEvent, cause *eventsv1.RuntimeEvent, target string) {
	for i, ev := range evs {
		ev.EventId = derivedID("reaction", cause.GetEventId(), target, ev.GetType(), string(rune('a'+i)))
	}
}

// parallel runs f for each id with a bounded number at once: one blocker
// can unblock many dependents, each its own aggregate.
func parallel(ctx context.Context, ids []string, f func(context.Context, string) error) error {
	if len(ids) == 1 {
		return f(ctx, ids[0])
	}
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(ctx, id); err != nil {
				mu.Lock()
				first = errors.Join(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// sweep marks runs whose lease expired lost, and ends runs whose time or
// inactivity limit fired, every SweepInterval. Several replicas may sweep
// at once: the write path's expected sequence lets one write each fact,
// and the other's decision then finds the run no longer active.
func (a *App) sweep(ctx context.Context) error {
	tick := time.NewTicker(a.cfg.SweepInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if err := a.SweepOnce(ctx); err != nil && ctx.Err() == nil {
			a.logger.WarnContext(ctx, "task sweep", "error", err)
		}
	}
}

// SweepOnce checks every active run once.
func (a *App) SweepOnce(ctx context.Context) error {
	entries, err := a.store.Range(ctx, readmodel.ActiveRuns, projection.RangeQuery{})
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		tenant, id := readmodel.SplitActive(e.Member)
		t, err := a.LoadTask(ctx, tenant, id)
		if err != nil {
			continue
		}
		at := domain.CurrentAttempt(t)
		if at == nil {
			continue
		}
		now := a.cfg.Now()
		var decide func(*tasksv1.Task) ([]*eventsv1.RuntimeEvent, error)
		switch {
		case at.GetLeased():
			holder, held, err := a.leases.Holder(ctx, LeaseKey(tenant, id))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if !held || auth.LeaseRun(holder) != at.GetRunId() {
				decide = func(t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
					return domain.DecideLose(t, at.GetRunId(), a.now())
				}
			}
		}
		if decide == nil {
			tp := t.GetSpec().GetTimeoutPolicy()
			if d := tp.GetRunTimeout().AsDuration(); d > 0 && now.Sub(at.GetStartedAt().AsTime()) > d {
				decide = func(t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
					return domain.DecideTimeout(t, at.GetRunId(), "run timeout of "+d.String()+" passed", a.now())
				}
			} else if d := tp.GetInactivityTimeout().AsDuration(); d > 0 && now.Sub(at.GetLastActivityAt().AsTime()) > d {
				idle, err := a.turnIdle(ctx, tenant, at, d, now)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if idle {
					decide = func(t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
						return domain.DecideTimeout(t, at.GetRunId(), "no progress for "+d.String(), a.now())
					}
				}
			}
		}
		if decide == nil {
			continue
		}
		_, err = a.onTask(ctx, tenant, id, "", func(_ context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
			evs, err := decide(t)
			if fault.Is(err, fault.KindPrecondition) {
				return nil, nil // another replica (or the worker) settled the run first
			}
			for i, ev := range evs {
				// One id per (run, outcome): two sweepers write one fact.
				ev.EventId = derivedID("sweep", tenant, id, at.GetRunId(), ev.GetType(), string(rune('a'+i)))
			}
			return evs, err
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// turnCatchUp bounds the sweeper's wait for the turn-ends projection
// before it times out a carried run (turnIdle).
const turnCatchUp = 5 * time.Second

// turnIdle says whether the turn that carries the attempt, if any, has
// been idle for longer than d at now: a carried run's inactivity follows
// its turn (readmodel.TaskTurn). The caller found the attempt's own last
// activity (its progress facts) older than d; a run not carried is then
// idle. A carried one is not while its turn waits for a person (an action
// open on it, or parked for one), nor within d of the turn's last
// activity (a run of it starting, a step boundary, an answer). A turn
// whose note is gone (ended: its end settles the run) or names another
// run counts for nothing.
//
// The note is read from the read model, which may lag the log: before
// answering idle, the sweeper lets the turn-ends projection hold every
// fact of the turn's thread in the log now (its partition only), and
// reads again, so a turn that just moved is not timed out.
func (a *App) turnIdle(ctx context.Context, tenant string, at *tasksv1.Attempt, d time.Duration, now time.Time) (bool, error) {
	c := at.GetCarriedBy()
	if c.GetTurnId() == "" {
		return true, nil
	}
	idle := func() (bool, error) {
		tt, err := readmodel.LoadTaskTurn(ctx, a.store, tenant, c.GetTurnId())
		if err != nil {
			return false, err
		}
		if tt == nil || tt.RunID != at.GetRunId() {
			return true, nil
		}
		return !tt.Waiting() && now.Sub(tt.LastActivityAt()) > d, nil
	}
	if quiet, err := idle(); err != nil || !quiet || c.GetSessionId() == "" || c.GetThreadId() == "" {
		return quiet, err
	}
	thread := a.log.Subjects.Aggregate(eventlog.Aggregate{Tenant: tenant, Session: c.GetSessionId(), Kind: "thread", ID: c.GetThreadId()})
	if err := projector.CaughtUp(ctx, a.log.Of(tenant, c.GetSessionId()), a.store, readmodel.TurnEndsName, []string{thread}, turnCatchUp); err != nil {
		return false, err
	}
	return idle()
}
