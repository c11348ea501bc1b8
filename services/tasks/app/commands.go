package app

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/fairshare"
	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/tasks/domain"
	"github.com/agentruntime/agentruntime/services/tasks/readmodel"
)

// CreateTask creates a task (queued, or blocked by unfinished blockers;
// draft when asked). With an idempotency key and no task id, the id is
// derived from the key, so a repeated create lands on the same task.
func (a *App) CreateTask(ctx context.Context, tenant string, req *tasksv1.CreateTaskRequest) (Result, *tasksv1.Task, error) {
	if err := fairshare.Validate("", req.GetPriority(), req.GetFairnessKey(), req.FairnessWeight); err != nil {
		return Result{}, nil, err
	}
	id := req.GetTaskId()
	if id == "" && req.GetIdempotencyKey() != "" {
		id = ids.Task + "_" + derivedID(tenant, "create_task", req.GetIdempotencyKey())[len(ids.Event)+1:][:32]
	}
	if id == "" {
		id = ids.New(ids.Task)
	}
	// Inputs from other aggregates are read from the log as it is now
	// (cancellation intent on the parent must be seen, a blocker's status
	// decides the edge); a blocker that finishes after this read reaches
	// the new task through the dependency reactor.
	sessionID := req.GetSessionId()
	var parent *tasksv1.Task
	if p := req.GetParentTaskId(); p != "" {
		var err error
		if parent, err = a.current(ctx, tenant, p); err != nil {
			return Result{}, nil, err
		}
		if sessionID == "" {
			sessionID = parent.GetSessionId() // a child lives in its parent's session
		}
	}
	if req.GetThreadId() != "" && sessionID == "" {
		// A task's facts are folded into its thread by the control plane
		// in the task's session's partition: a thread is of a session.
		return Result{}, nil, errThreadWithoutSession
	}
	blockers := map[string]domain.S{}
	for _, b := range req.GetBlockedBy() {
		if b == id {
			continue // refused by the decision
		}
		bt, err := a.current(ctx, tenant, b)
		if err != nil {
			return Result{}, nil, err
		}
		blockers[b] = domain.BlockerStatus(bt)
	}
	// The task's place in its priority's fair queue is decided here and
	// recorded in task.created (pkg/fairshare).
	class := fairshare.Resolve(req.GetPriority(), req.GetFairnessKey(), req.GetFairnessWeight(), sessionID)
	tag, err := a.fair.Tag(ctx, a.store, tenant, class, a.log.Partitions())
	if err != nil {
		return Result{}, nil, err
	}
	agg, exec, err := a.createOn(ctx, tenant, "task", id, taskAgg(tenant, &tasksv1.Task{TaskId: id, SessionId: sessionID}),
		req.GetTaskId() != "" || req.GetIdempotencyKey() != "")
	if err != nil {
		return Result{}, nil, err
	}
	res, err := exec(ctx, agg, func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		existing, err := taskIn(ctx, st, tenant, id)
		if fault.Is(err, fault.KindNotFound) {
			existing, err = nil, nil
		}
		if err != nil {
			return nil, err
		}
		evs, err := domain.DecideCreate(existing, domain.Create{
			TaskID: id, SessionID: sessionID, ThreadID: req.GetThreadId(), TurnID: req.GetTurnId(),
			IdempotencyKey: req.GetIdempotencyKey(), Spec: req.GetSpec(), BlockedBy: req.GetBlockedBy(),
			Blockers: blockers, Parent: parent, Draft: req.GetDraft(), Now: a.now(),
			Class: class, FairTag: tag,
		})
		if err == nil && len(evs) > 0 && req.GetIdempotencyKey() != "" {
			stampIDs(evs, agg.String(), req.GetIdempotencyKey())
		}
		return evs, err
	})
	if err != nil {
		return res, nil, err
	}
	t, err := res.task(ctx, tenant, id)
	return res, t, err
}

// errThreadWithoutSession: a thread_id is taken as a thread of the task's
// session (the tasks service cannot check it: control owns threads), so a
// task with no session cannot name one.
var errThreadWithoutSession = fault.Invalid("thread_id", "%s", "a thread belongs to a session, and this task or job has none: give session_id with thread_id")

// UpdateTask changes spec fields, or submits a draft.
func (a *App) UpdateTask(ctx context.Context, tenant string, req *tasksv1.UpdateTaskRequest) (Result, error) {
	return a.onTask(ctx, tenant, req.GetTaskId(), req.GetIdempotencyKey(), func(_ context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
		var evs []*eventsv1.RuntimeEvent
		if len(req.GetUpdateFields()) > 0 {
			up, err := domain.DecideUpdate(t, req.GetSpec(), req.GetUpdateFields(), a.now())
			if err != nil {
				return nil, err
			}
			evs = append(evs, up...)
			for _, ev := range up {
				t = domain.Apply(t, ev)
			}
		}
		if req.GetSubmit() {
			sub, err := domain.DecideSubmit(t, a.now())
			if err != nil {
				return nil, err
			}
			evs = append(evs, sub...)
		}
		return evs, nil
	})
}

// Started is the answer of a command that began an attempt.
type Started struct {
	Result
	RunID, AttemptID string
	LeaseExpiresAt   time.Time
	// LeaseToken proves the lease of a leased run: heartbeats, progress
	// and the run's end carry it with the run id.
	LeaseToken string
}

// StartTask begins an attempt bound to a worker, thread or job item. With
// a lease ttl the run is supervised by a worker lease (taken before the
// attempt is written, so the sweeper never sees a leased run without it).
func (a *App) StartTask(ctx context.Context, tenant string, req *tasksv1.StartTaskRequest) (Started, error) {
	runID := req.GetRunId()
	if runID == "" {
		runID = ids.New(ids.Run)
	}
	ttl := req.GetLeaseTtl().AsDuration()
	return a.start(ctx, tenant, req.GetTaskId(), req.GetIdempotencyKey(), runID, req.GetWorker(), req.GetInputRefs(), ttl, func(t *tasksv1.Task, s domain.Start) ([]*eventsv1.RuntimeEvent, error) {
		if a := domain.CurrentAttempt(t); a != nil && a.GetRunId() == runID {
			return nil, nil // this start already happened
		}
		return domain.DecideStart(t, s)
	})
}

func (a *App) start(ctx context.Context, tenant, taskID, idemKey, runID string, worker *tasksv1.WorkerRef, inputs []string, ttl time.Duration,
	decide func(*tasksv1.Task, domain.Start) ([]*eventsv1.RuntimeEvent, error)) (Started, error) {
	var expires time.Time
	var token string
	if ttl > 0 {
		token = auth.NewLeaseToken()
		ok, err := a.leases.Acquire(ctx, LeaseKey(tenant, taskID), auth.LeaseHolder(runID, token), ttl)
		if err != nil {
			return Started{}, err
		}
		if !ok {
			t, err := a.current(ctx, tenant, taskID)
			if err != nil {
				return Started{}, err
			}
			return Started{}, domain.IllegalStart(t)
		}
		expires = a.now().Add(ttl)
	}
	attemptID := ids.New(ids.Attempt)
	res, err := a.onTask(ctx, tenant, taskID, idemKey, func(_ context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
		if at, ok := domain.StartInFlight(t); ok {
			// A start cut between its two events (a log written before
			// commands were atomic batches): this command's own cut start
			// finishes; another start is refused as if the task ran.
			if at.GetRunId() == runID {
				return domain.FinishStart(t, at, a.now()), nil
			}
			return nil, domain.StartInProgress(t)
		}
		return decide(t, domain.Start{RunID: runID, AttemptID: attemptID, Worker: worker, InputRefs: inputs, Leased: ttl > 0, Now: a.now()})
	})
	if err != nil {
		if ttl > 0 {
			// Nothing was written: the lease guards no run. Released with a
			// context that outlives the caller's.
			_ = a.leases.Release(context.WithoutCancel(ctx), LeaseKey(tenant, taskID), auth.LeaseHolder(runID, token))
		}
		return Started{}, err
	}
	return Started{Result: res, RunID: runID, AttemptID: attemptID, LeaseExpiresAt: expires, LeaseToken: token}, nil
}

// AppendTaskProgress records progress facts of the active run.
func (a *App) AppendTaskProgress(ctx context.Context, tenant string, req *tasksv1.AppendTaskProgressRequest) (Result, error) {
	return a.onTask(ctx, tenant, req.GetTaskId(), req.GetIdempotencyKey(), func(ctx context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
		if err := a.fence(ctx, tenant, t, req.GetRunId(), req.GetLeaseToken(), false); err != nil {
			return nil, err
		}
		return domain.DecideProgress(t, domain.Progress{
			RunID: req.GetRunId(), Progress: req.GetProgress(), Artifacts: req.GetArtifacts(), EvidenceRefs: req.GetEvidenceRefs(),
			CheckpointRefs: req.GetCheckpointRefs(), RunState: req.GetRunState(), Reason: req.GetReason(), Now: a.now(),
		})
	})
}

func (a *App) PauseTask(ctx context.Context, tenant string, req *tasksv1.PauseTaskRequest) (Result, error) {
	return a.onTask(ctx, tenant, req.GetTaskId(), req.GetIdempotencyKey(), func(_ context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
		return domain.DecidePause(t, req.GetReason(), a.now())
	})
}

func (a *App) ResumeTask(ctx context.Context, tenant string, req *tasksv1.ResumeTaskRequest) (Result, error) {
	return a.onTask(ctx, tenant, req.GetTaskId(), req.GetIdempotencyKey(), func(_ context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
		return domain.DecideResume(t, req.GetReason(), a.now())
	})
}

// CancelTask records the intent; the reactor propagates it to children
// and jobs (unless no_propagation) once it is in the log.
func (a *App) CancelTask(ctx context.Context, tenant, requestedBy string, req *tasksv1.CancelTaskRequest) (Result, tasksv1.TaskStatus, error) {
	res, err := a.onTask(ctx, tenant, req.GetTaskId(), req.GetIdempotencyKey(), func(_ context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
		return domain.DecideCancel(t, domain.Cancel{Reason: req.GetReason(), RequestedBy: requestedBy, Propagate: !req.GetNoPropagation(), Force: req.GetForce(), Now: a.now()})
	})
	if err != nil {
		return res, 0, err
	}
	t, err := res.task(ctx, tenant, req.GetTaskId())
	if err != nil {
		return res, 0, err
	}
	if t.GetStatus() == domain.Cancelled {
		a.releaseLast(ctx, tenant, t)
	}
	return res, t.GetStatus(), nil
}

// RetryTask opens a new attempt after a terminal failure.
func (a *App) RetryTask(ctx context.Context, tenant string, req *tasksv1.RetryTaskRequest) (Started, error) {
	var start *domain.Start
	out := Started{}
	if req.GetWorker() != nil {
		out.RunID = req.GetRunId()
		if out.RunID == "" {
			out.RunID = ids.New(ids.Run)
		}
		out.AttemptID = ids.New(ids.Attempt)
		start = &domain.Start{RunID: out.RunID, AttemptID: out.AttemptID, Worker: req.GetWorker(), Now: a.now()}
	}
	res, err := a.onTask(ctx, tenant, req.GetTaskId(), req.GetIdempotencyKey(), func(_ context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
		return domain.DecideRetry(t, domain.Retry{Reason: req.GetReason(), Start: start, Now: a.now()})
	})
	out.Result = res
	return out, err
}

// CompleteTask reconciles completion of the active run.
func (a *App) CompleteTask(ctx context.Context, tenant string, req *tasksv1.CompleteTaskRequest) (Result, error) {
	return a.complete(ctx, tenant, req, false)
}

// complete is CompleteTask; byTurn is the runtime settling a run its turn
// carried (the worker that delegated it may not).
func (a *App) complete(ctx context.Context, tenant string, req *tasksv1.CompleteTaskRequest, byTurn bool) (Result, error) {
	res, err := a.onTask(ctx, tenant, req.GetTaskId(), req.GetIdempotencyKey(), func(ctx context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
		if done := lastAttempt(t, req.GetRunId()); done != nil && done.GetStatus() == tasksv1.RunStatus_RUN_STATUS_COMPLETED {
			return nil, nil // completing the same run again
		}
		if err := a.fence(ctx, tenant, t, req.GetRunId(), req.GetLeaseToken(), byTurn); err != nil {
			return nil, err
		}
		return domain.DecideComplete(t, domain.Complete{
			RunID: req.GetRunId(), Summary: req.GetSummary(), Artifacts: req.GetArtifacts(), EvidenceRefs: req.GetEvidenceRefs(),
			OutputRefs: req.GetOutputRefs(), CheckpointRefs: req.GetCheckpointRefs(), NativeStatus: req.GetNativeStatus(), Now: a.now(),
		})
	})
	if err == nil {
		a.release(ctx, tenant, req.GetTaskId(), req.GetRunId())
	}
	return res, err
}

// FailTask ends the active run as failed; the retry policy may schedule
// another attempt.
func (a *App) FailTask(ctx context.Context, tenant string, req *tasksv1.FailTaskRequest) (Result, tasksv1.TaskStatus, error) {
	return a.fail(ctx, tenant, req, false)
}

// fail is FailTask; byTurn as for complete.
func (a *App) fail(ctx context.Context, tenant string, req *tasksv1.FailTaskRequest, byTurn bool) (Result, tasksv1.TaskStatus, error) {
	res, err := a.onTask(ctx, tenant, req.GetTaskId(), req.GetIdempotencyKey(), func(ctx context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
		if err := a.fence(ctx, tenant, t, req.GetRunId(), req.GetLeaseToken(), byTurn); err != nil {
			return nil, err
		}
		return domain.DecideFail(t, domain.Fail{
			RunID: req.GetRunId(), Error: req.GetError(), OutputRefs: req.GetOutputRefs(), CheckpointRefs: req.GetCheckpointRefs(), NoRetry: req.GetNoRetry(), Now: a.now(),
		})
	})
	if err != nil {
		return res, 0, err
	}
	a.release(ctx, tenant, req.GetTaskId(), req.GetRunId())
	t, err := res.task(ctx, tenant, req.GetTaskId())
	if err != nil {
		return res, 0, err
	}
	return res, t.GetStatus(), nil
}

func (a *App) ArchiveTask(ctx context.Context, tenant string, req *tasksv1.ArchiveTaskRequest) (Result, error) {
	return a.onTask(ctx, tenant, req.GetTaskId(), req.GetIdempotencyKey(), func(_ context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
		return domain.DecideArchive(t, req.GetReason(), a.now())
	})
}

func lastAttempt(t *tasksv1.Task, runID string) *tasksv1.Attempt {
	for _, at := range t.GetAttempts() {
		if at.GetRunId() == runID {
			return at
		}
	}
	return nil
}

// release frees the run's lease once its end is in the log; best effort:
// an unreleased lease only expires. Whoever ended the run (the worker, or
// an operator's cancel) need not know its token: the holder is read and
// released only while it is still this run's (a release compares).
func (a *App) release(ctx context.Context, tenant, taskID, runID string) {
	ctx = context.WithoutCancel(ctx)
	key := LeaseKey(tenant, taskID)
	holder, held, err := a.leases.Holder(ctx, key)
	if err == nil && held && auth.LeaseRun(holder) == runID {
		err = a.leases.Release(ctx, key, holder)
	}
	if err != nil {
		a.logger.WarnContext(ctx, "release lease", "task_id", taskID, "run_id", runID, "error", err)
	}
}

// fence admits a report for a leased run (progress, the run's end) only
// from the holder of its lease: the run id with the token its poll (or
// start) handed out. A run that was lost, timed out or cancelled, or whose
// lease lapsed or is held by another run, is LEASE_LOST and nothing is
// recorded. A run that ended by its own report is left to the decision
// (repeats are idempotent); runs without a lease (bound to a thread or a
// job item) are not fenced. A run a turn carries (DelegateTaskRun) is
// settled by the runtime when the turn ends (byTurn), never by a report.
func (a *App) fence(ctx context.Context, tenant string, t *tasksv1.Task, runID, token string, byTurn bool) error {
	at := lastAttempt(t, runID)
	if at.GetCarriedBy() != nil && at.GetStatus() == tasksv1.RunStatus_RUN_STATUS_RUNNING && !byTurn {
		return domain.RunDelegated(t, at)
	}
	if at == nil || !at.GetLeased() {
		return nil
	}
	switch at.GetStatus() {
	case tasksv1.RunStatus_RUN_STATUS_RUNNING:
	case tasksv1.RunStatus_RUN_STATUS_COMPLETED, tasksv1.RunStatus_RUN_STATUS_FAILED:
		return nil
	default:
		return domain.LeaseLost(t, runID)
	}
	holder, held, err := a.leases.Holder(ctx, LeaseKey(tenant, t.GetTaskId()))
	if err != nil {
		return err
	}
	if !held || !auth.HoldsLease(holder, runID, token) {
		return domain.LeaseLost(t, runID)
	}
	return nil
}

func (a *App) releaseLast(ctx context.Context, tenant string, t *tasksv1.Task) {
	if n := len(t.GetAttempts()); n > 0 {
		a.release(ctx, tenant, t.GetTaskId(), t.GetAttempts()[n-1].GetRunId())
	}
}

// LinkTasks adds an edge, stored on the task it constrains (CHILD and
// BLOCKS are turned around). A BLOCKED_BY edge that would close a cycle is
// refused.
func (a *App) LinkTasks(ctx context.Context, tenant string, req *tasksv1.LinkTasksRequest) (Result, error) {
	return a.link(ctx, tenant, req.GetTaskId(), req.GetRelation(), req.GetTargetId(), req.GetReason(), req.GetIdempotencyKey(), false)
}

// UnlinkTasks marks an edge removed (kept for history).
func (a *App) UnlinkTasks(ctx context.Context, tenant string, req *tasksv1.UnlinkTasksRequest) (Result, error) {
	return a.link(ctx, tenant, req.GetTaskId(), req.GetRelation(), req.GetTargetId(), req.GetReason(), req.GetIdempotencyKey(), true)
}

func (a *App) link(ctx context.Context, tenant, taskID string, rel tasksv1.EdgeRelation, target, reason, key string, remove bool) (Result, error) {
	owner, rel, target := domain.Normalize(taskID, rel, target)
	var targetStatus domain.S
	if domain.IsTaskRelation(rel) {
		tt, err := a.current(ctx, tenant, target)
		if err != nil {
			return Result{}, err
		}
		targetStatus = domain.BlockerStatus(tt)
	}
	if rel == tasksv1.EdgeRelation_EDGE_RELATION_BLOCKED_BY && !remove {
		cycle, err := domain.PathExists(target, owner, a.blockersOf(ctx, tenant))
		if err != nil {
			return Result{}, err
		}
		if cycle {
			return Result{}, domain.CycleError(owner, target)
		}
	}
	return a.onTask(ctx, tenant, owner, key, func(ctx context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
		l := domain.Link{Relation: rel, TargetID: target, Reason: reason, Remove: remove, Now: a.now()}
		if rel == tasksv1.EdgeRelation_EDGE_RELATION_BLOCKED_BY {
			l.TargetStatus = targetStatus
		}
		return domain.DecideLink(t, l)
	})
}

// blockersOf follows BLOCKED_BY edges as the log holds them now (a link
// answered a moment ago is in the next cycle check on any replica).
func (a *App) blockersOf(ctx context.Context, tenant string) func(string) ([]string, error) {
	return func(id string) ([]string, error) {
		t, err := a.current(ctx, tenant, id)
		if fault.Is(err, fault.KindNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var out []string
		for _, e := range t.GetEdges() {
			if e.GetRelation() == tasksv1.EdgeRelation_EDGE_RELATION_BLOCKED_BY && e.GetStatus() != tasksv1.EdgeStatus_EDGE_STATUS_REMOVED {
				out = append(out, e.GetTargetId())
			}
		}
		return out, nil
	}
}

// Heartbeat renews the run's lease and tells the worker whether
// cancellation or a pause was requested.
type Heartbeat struct {
	ExpiresAt       time.Time
	CancelRequested bool
	PauseRequested  bool
}

func (a *App) HeartbeatTask(ctx context.Context, tenant string, req *tasksv1.HeartbeatTaskRequest) (Heartbeat, error) {
	// The task as the log holds it: the run just started, or the cancel
	// just requested, on any replica.
	t, err := a.current(ctx, tenant, req.GetTaskId())
	if err != nil {
		return Heartbeat{}, err
	}
	ttl := req.GetLeaseTtl().AsDuration()
	if ttl <= 0 {
		ttl = a.cfg.DefaultLeaseTTL
	}
	ok, err := a.leases.Renew(ctx, LeaseKey(tenant, t.GetTaskId()), auth.LeaseHolder(req.GetRunId(), req.GetLeaseToken()), ttl)
	if err != nil {
		return Heartbeat{}, err
	}
	if !ok || req.GetLeaseToken() == "" || t.GetCurrentRunId() != req.GetRunId() {
		return Heartbeat{}, domain.LeaseLost(t, req.GetRunId())
	}
	return Heartbeat{ExpiresAt: a.now().Add(ttl), CancelRequested: t.GetCancelRequested(), PauseRequested: t.GetStatus() == domain.Paused}, nil
}

// Polled is a poll's answer; Task is nil when nothing was runnable in time.
type Polled struct {
	Started
	Task *tasksv1.Task
}

// PollTask waits up to `wait` for a runnable task of the tenant, starts a
// new attempt of it bound to the worker and grants the worker its lease.
// Concurrent pollers (on any replica) never get the same task: the lease
// is taken first (one holder per task), and the attempt is appended at the
// task's expected sequence (one start per task state).
func (a *App) PollTask(ctx context.Context, tenant string, req *tasksv1.PollTaskRequest) (Polled, error) {
	ttl := req.GetLeaseTtl().AsDuration()
	if ttl <= 0 {
		ttl = a.cfg.DefaultLeaseTTL
	}
	if err := a.ensureWarm(ctx); err != nil {
		return Polled{}, err
	}
	deadline := a.cfg.Now().Add(req.GetWait().AsDuration())
	worker := &tasksv1.WorkerRef{WorkerId: req.GetWorkerId(), Kind: "worker"}
	for {
		seen, err := a.checkpoints(ctx)
		if err != nil {
			return Polled{}, err
		}
		got, err := a.tryStartOne(ctx, tenant, req.GetTaskKinds(), worker, ttl)
		if err != nil || got.Task != nil {
			return got, err
		}
		left := deadline.Sub(a.cfg.Now())
		if left <= 0 {
			return Polled{}, nil
		}
		// Sleep until the read model moves in any partition (a task may
		// have become runnable), at most PollNap so backoffs that end are
		// noticed.
		wctx, cancel := context.WithTimeout(ctx, min(left, a.cfg.PollNap))
		err = a.moved(wctx, seen)
		cancel()
		if ctx.Err() != nil {
			return Polled{}, ctx.Err()
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return Polled{}, err
		}
	}
}

// checkpoints are how far the read model has applied each partition of
// the log (one on a log of one partition).
func (a *App) checkpoints(ctx context.Context) ([]uint64, error) {
	views := a.log.Views()
	seen := make([]uint64, len(views))
	for k, v := range views {
		cp, err := projector.Checkpoint(ctx, v, a.store, readmodel.Name)
		if err != nil {
			return nil, err
		}
		seen[k] = cp
	}
	return seen, nil
}

// moved waits until the read model has applied anything past seen (from
// checkpoints) in any partition: partitions are waited for at once, and
// the first to move ends the wait.
func (a *App) moved(ctx context.Context, seen []uint64) error {
	p := a.log.Partitions()
	if len(seen) == 1 {
		_, err := a.store.WaitFor(ctx, projector.CheckpointName(readmodel.Name, p, 0), seen[0]+1)
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	first := make(chan error, len(seen))
	for k := range seen {
		wg.Go(func() {
			_, err := a.store.WaitFor(ctx, projector.CheckpointName(readmodel.Name, p, k), seen[k]+1)
			first <- err
		})
	}
	return <-first
}

// pollSpread is how far ahead a poller that lost a race jumps: pollers
// take tasks in claim order (readmodel.TaskQueue), and concurrent ones
// racing for the same task would otherwise race again for the next; the
// loser of a race only moves on, but each lost race costs round trips.
const pollSpread = 8

// tryStartOne starts the first runnable task it can, most urgent priority
// first, each priority in fair-share order.
func (a *App) tryStartOne(ctx context.Context, tenant string, kinds []string, worker *tasksv1.WorkerRef, ttl time.Duration) (Polled, error) {
	prios, err := readmodel.TaskQueue.Priorities(ctx, a.store, tenant)
	if err != nil {
		return Polled{}, err
	}
	for _, p := range prios {
		got, err := a.startFrom(ctx, tenant, readmodel.TaskQueue.Index(tenant, p), kinds, worker, ttl)
		if err != nil || got.Task != nil {
			return got, err
		}
	}
	return Polled{}, nil
}

// startFrom starts the first task of index it can, in the index's order;
// after a lost race (the task taken, or started since the index was read)
// it goes on from a random one of the next pollSpread tasks.
func (a *App) startFrom(ctx context.Context, tenant, index string, kinds []string, worker *tasksv1.WorkerRef, ttl time.Duration) (Polled, error) {
	var offset int64
	const page = 64
	for {
		entries, err := a.store.Range(ctx, index, projection.RangeQuery{Offset: offset, Limit: page})
		if err != nil || len(entries) == 0 {
			return Polled{}, err
		}
		for rest := entries; len(rest) > 0; {
			e := rest[0]
			rest = rest[1:]
			got, lost, err := a.startEntry(ctx, tenant, e.Member, kinds, worker, ttl)
			if err != nil || got.Task != nil {
				return got, err
			}
			if lost && len(rest) > 1 {
				shift := rand.IntN(min(len(rest), pollSpread))
				rest = append(slices.Clone(rest[shift:]), rest[:shift]...)
			}
		}
		if len(entries) < page {
			return Polled{}, nil
		}
		offset += page
	}
}

// startEntry starts one task of a runnable index if it can; lost says
// another worker got it first.
func (a *App) startEntry(ctx context.Context, tenant, id string, kinds []string, worker *tasksv1.WorkerRef, ttl time.Duration) (got Polled, lost bool, err error) {
	t, err := a.LoadTask(ctx, tenant, id)
	if err != nil {
		return Polled{}, false, nil
	}
	if !domain.Runnable(t) {
		return Polled{}, true, nil // started since the index was read
	}
	if len(kinds) > 0 && !contains(kinds, t.GetSpec().GetTaskKind()) {
		return Polled{}, false, nil
	}
	if nb := t.GetNotBefore(); nb != nil && nb.AsTime().After(a.cfg.Now()) {
		return Polled{}, false, nil // backing off
	}
	runID := ids.New(ids.Run)
	st, err := a.start(ctx, tenant, t.GetTaskId(), "", runID, worker, nil, ttl, domain.DecideStart)
	if fault.Is(err, fault.KindPrecondition) {
		return Polled{}, true, nil // another worker took it first
	}
	if err != nil {
		return Polled{}, false, err
	}
	t, err = st.task(ctx, tenant, t.GetTaskId())
	if err != nil {
		return Polled{}, false, err
	}
	return Polled{Started: st, Task: t}, false, nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
