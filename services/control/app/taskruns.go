package app

import (
	"context"
	"log/slog"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projector"
)

// TaskRunReactor is the checkpoint of the loop that interrupts the turns
// of cancelled task runs.
const TaskRunReactor = "control.task-run-reactor"

// ReactToTaskRunCancels follows the tasks service's task.cancel_requested
// facts and interrupts the turn that carries the cancelled run (a run a
// worker handed to its turn: DelegateTaskRun, the fact's carried_by). The
// turn then ends cancelled and the tasks service settles the run with it.
// A run that ended without its turn (task.attempt.failed with carried_by:
// a timeout, a forced cancel) has its turn interrupted likewise.
// The tasks service never calls this service: the log carries the
// request, as it carries permission requests the other way. A replay
// interrupts nothing twice (a turn that ended is not interrupted).
func (a *App) ReactToTaskRunCancels(ctx context.Context, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	err := projector.React(ctx, a.Log, a.Store, taskRunReactor{app: a, logger: logger}, logger)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

type taskRunReactor struct {
	app    *App
	logger *slog.Logger
}

func (taskRunReactor) Name() string        { return TaskRunReactor }
func (r taskRunReactor) Filters() []string { return []string{r.app.Log.Subjects.Kind("*", "task")} }

func (taskRunReactor) Wants(ev *eventsv1.RuntimeEvent) bool {
	return carriedBy(ev).GetTurnId() != ""
}

// carriedBy is the turn a fact asks to interrupt: the turn of a run whose
// cancellation was requested, or of a run that ended without its turn (a
// timeout, a forced cancel).
func carriedBy(ev *eventsv1.RuntimeEvent) *tasksv1.RunTurn {
	switch ev.GetType() {
	case events.TypeTaskCancelRequested:
		return ev.GetTaskCancelRequested().GetCarriedBy()
	case events.TypeTaskAttemptFailed:
		return ev.GetTaskAttemptFailed().GetCarriedBy()
	}
	return nil
}

func (r taskRunReactor) React(ctx context.Context, rec *eventlog.Record) error {
	ev := rec.Event
	carried := carriedBy(ev)
	reason := "its task's cancellation was requested: " + ev.GetTaskCancelRequested().GetReason()
	if f := ev.GetTaskAttemptFailed(); f != nil {
		reason = "its task run ended: " + f.GetError().GetMessage()
	}
	c := Caller{Tenant: ev.GetTenantId(), Subject: "runtime:tasks"}
	tu, err := r.app.turn(ctx, c, carried.GetTurnId())
	if fault.Is(err, fault.KindNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	// Only the turn submitted for this task: the fact names the turn a
	// worker said carries the run, and a worker may not make a
	// cancellation interrupt another turn of the tenant.
	if tu.GetMetadata()["task_id"] != ev.GetTaskId() || tu.GetSessionId() != carried.GetSessionId() || tu.GetThreadId() != carried.GetThreadId() {
		r.logger.WarnContext(ctx, "task cancel not applied: the turn that carries the run was not submitted for the task",
			"task_id", ev.GetTaskId(), "turn_id", carried.GetTurnId())
		return nil
	}
	_, err = r.app.InterruptTurn(ctx, c, &controlv1.InterruptTurnRequest{SessionId: carried.GetSessionId(), ThreadId: carried.GetThreadId(),
		TurnId: carried.GetTurnId(), Reason: reason})
	if fault.Is(err, fault.KindNotFound) || fault.Is(err, fault.KindPrecondition) {
		return nil // gone, or ended: nothing to interrupt
	}
	return err
}
