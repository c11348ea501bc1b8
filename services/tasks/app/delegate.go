package app

import (
	"context"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/tasks/domain"
	"github.com/agentruntime/agentruntime/services/tasks/readmodel"
)

// A run carried by a turn. A worker that runs a task as a turn submits
// the turn and hands the run to it (DelegateTaskRun): the fact
// task.delegated (kind "turn") names the turn on the attempt (carried_by),
// the worker's lease is released, and the run stays running without a
// heartbeat. The service settles it when the turn ends, exactly as the
// worker would have: turn.completed completes it (idempotency key
// "complete:"+run, an acceptance refusal fails it acceptance_not_met),
// turn.failed fails it ("fail:"+run, the turn's category).
//
// The turn's end (a control fact, in the turn's session) and the
// delegation (a task fact, in the task's session) may come in either
// order, in different partitions. Each side writes its half, then reads
// the other's: the turn-ends projection stores the end under the turn's
// id (readmodel.TurnEnds) before the settler reacts to it and reads the
// task as the log holds it; the settler reacting to the delegation reads
// the stored end. Whichever comes second sees the first; when both see
// each other both settle, and the second write is absorbed (its
// idempotency key answers the first's result, or the decision finds the
// run ended and writes nothing).

// SettlerName keys the settler's checkpoint.
const SettlerName = "tasks.turn-settler"

// DelegateTaskRun hands the polled run to its turn.
func (a *App) DelegateTaskRun(ctx context.Context, tenant string, req *tasksv1.DelegateTaskRunRequest) (Result, error) {
	turn := &tasksv1.RunTurn{SessionId: req.GetSessionId(), ThreadId: req.GetThreadId(), TurnId: req.GetTurnId()}
	res, err := a.onTask(ctx, tenant, req.GetTaskId(), req.GetIdempotencyKey(), func(ctx context.Context, t *tasksv1.Task) ([]*eventsv1.RuntimeEvent, error) {
		if c := lastAttempt(t, req.GetRunId()).GetCarriedBy(); c != nil && c.GetTurnId() == turn.GetTurnId() {
			return nil, nil // delegated already (its lease is gone)
		}
		if err := a.fence(ctx, tenant, t, req.GetRunId(), req.GetLeaseToken(), false); err != nil {
			return nil, err
		}
		return domain.DecideDelegate(t, domain.Delegate{RunID: req.GetRunId(), Turn: turn, Now: a.now()})
	})
	if err == nil {
		a.release(ctx, tenant, req.GetTaskId(), req.GetRunId())
	}
	return res, err
}

// settle follows turn ends and delegations and settles the runs whose
// turn ended. It resumes from its checkpoint: a settling lost in a crash
// is redone, and a repeat is absorbed.
func (a *App) settle(ctx context.Context) error {
	return projector.React(ctx, a.log, a.store, settler{a}, a.logger)
}

type settler struct{ a *App }

func (settler) Name() string { return SettlerName }
func (s settler) Filters() []string {
	return []string{s.a.log.Subjects.Kind("*", "thread"), s.a.log.Subjects.Kind("*", "task")}
}

func (settler) Wants(ev *eventsv1.RuntimeEvent) bool {
	switch ev.GetType() {
	case events.TypeTurnCompleted, events.TypeTurnFailed:
		return true
	case domain.TypeTaskDelegated:
		return ev.GetTaskDelegated().GetTargetKind() == domain.TargetTurn
	}
	return false
}

func (s settler) React(ctx context.Context, rec *eventlog.Record) error {
	a, ev := s.a, rec.Event
	tenant := ev.GetTenantId()
	if ev.GetType() == domain.TypeTaskDelegated {
		end, err := readmodel.LoadTurnEnd(ctx, a.store, tenant, ev.GetTaskDelegated().GetTurn().GetTurnId())
		if err != nil || end == nil {
			return err // not ended yet: its end settles the run
		}
		return a.settleCarried(ctx, tenant, ev.GetTaskId(), ev.GetRunId(), end)
	}
	// The end is stored (or the turn is not a task run's) once the
	// turn-ends projection has applied it.
	if _, err := projector.WaitFor(ctx, a.log, a.store, readmodel.TurnEndsName, ev.GetSequence(), time.Minute); err != nil {
		return err
	}
	end, err := readmodel.LoadTurnEnd(ctx, a.store, tenant, ev.GetTurnId())
	if err != nil || end == nil {
		return err
	}
	// The stored end names the task run from the turn's metadata.
	return a.settleCarried(ctx, tenant, end.GetTaskId(), end.GetRunId(), end)
}

// settleCarried ends the run with its turn's end when the run is still
// active and carried by that turn, and the turn was submitted for it
// (its metadata); otherwise it does nothing (not
// delegated yet: the delegation settles it; settled already).
func (a *App) settleCarried(ctx context.Context, tenant, taskID, run string, end *eventsv1.RuntimeEvent) error {
	if end.GetTaskId() != taskID || end.GetRunId() != run {
		// The run was handed to a turn not submitted for it (its metadata
		// names another run): that turn's end does not settle it.
		a.logger.WarnContext(ctx, "a delegated run's turn was not submitted for it", "task_id", taskID, "run_id", run, "turn_id", end.GetTurnId())
		return nil
	}
	t, err := a.current(ctx, tenant, taskID)
	if err != nil {
		return ignoreGone(err)
	}
	at := lastAttempt(t, run)
	if c := at.GetCarriedBy(); at.GetStatus() != tasksv1.RunStatus_RUN_STATUS_RUNNING || c == nil || c.GetTurnId() != end.GetTurnId() {
		return nil
	}
	turn := end.GetTurnId()
	failWith := func(category, message string, retryable bool) error {
		_, _, err := a.fail(ctx, tenant, &tasksv1.FailTaskRequest{TaskId: taskID, RunId: run, IdempotencyKey: "fail:" + run,
			Error: &tasksv1.TaskError{Category: category, Message: clip(message, 4000), Retryable: retryable}}, true)
		if fault.Is(err, fault.KindPrecondition) {
			return nil // settled otherwise meanwhile (cancel forced, timed out)
		}
		return ignoreGone(err)
	}
	if end.GetType() == events.TypeTurnCompleted {
		_, err := a.complete(ctx, tenant, &tasksv1.CompleteTaskRequest{TaskId: taskID, RunId: run, IdempotencyKey: "complete:" + run,
			Summary: clip(end.GetTurnCompleted().GetSummary(), 8000), NativeStatus: "turn:" + turn}, true)
		if fault.Is(err, fault.KindPrecondition) {
			// e.g. acceptance not met: the turn ended, the task did not.
			msg := err.Error()
			if fe, ok := fault.As(err); ok {
				msg = fe.Message
			}
			return failWith("acceptance_not_met", msg, false)
		}
		return ignoreGone(err)
	}
	f := end.GetTurnFailed()
	category, msg := events.TaskFailureOfTurn(turn, f)
	return failWith(category, msg, f.GetRetryable())
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
