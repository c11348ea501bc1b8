package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

// Task runs: a worker with Config.Tasks also polls the tasks service
// (PollTask, under a lease) and runs each task run as a turn: it submits
// the task's objective as a turn on the task's thread (or a thread of its
// own), records the turn on the run (a progress fact naming it) and hands
// the run to the turn (DelegateTaskRun): the lease is released, the slot
// is free at once, and the tasks service settles the run when the turn
// ends (completed, or failed with the turn's category). The turn is an
// ordinary turn (claimed by any worker of the tenant, every step a fact,
// approvals, parking and interrupts as usual), so a turn that waits days
// for a person holds no task slot, no lease and no subscription, and a
// worker that stops leaves the run to its turn. A cancel request on the
// task interrupts the turn (the control service reacts to the fact).
//
// A tasks service that does not know DelegateTaskRun (Unimplemented: an
// older release during a rolling upgrade) gets the old behaviour: the
// worker follows the turn to its end under the run's lease and settles the
// run itself (followTask).

// runTasks polls task runs while ctx lasts, up to MaxTasks at once.
func (w *Worker) runTasks(ctx context.Context) {
	backoff := 200 * time.Millisecond
	slots := make(chan struct{}, w.cfg.MaxTasks)
	var running sync.WaitGroup
	defer running.Wait()
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		poll, err := w.tasks.PollTask(ctx, &tasksv1.PollTaskRequest{WorkerId: w.cfg.WorkerID, TaskKinds: w.cfg.TaskKinds,
			Wait: durationpb.New(min(w.cfg.ClaimWait, time.Minute)), LeaseTtl: durationpb.New(w.cfg.LeaseTTL)})
		if err != nil {
			<-slots
			if ctx.Err() != nil {
				return
			}
			if status.Code(err) == codes.Unimplemented {
				w.cfg.Logger.WarnContext(ctx, "the tasks service is not served here; not polling task runs", "error", err)
				return
			}
			w.cfg.Logger.WarnContext(ctx, "polling a task", "error", err)
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 200 * time.Millisecond
		if poll.GetTask() == nil {
			<-slots
			continue
		}
		running.Add(1)
		go func() {
			defer running.Done()
			defer func() { <-slots }()
			if err := w.RunTask(ctx, poll); err != nil && ctx.Err() == nil {
				w.cfg.Logger.WarnContext(ctx, "task run", "task_id", poll.GetTask().GetTaskId(), "run_id", poll.GetRunId(), "error", err)
			}
		}()
	}
}

var errTaskLeaseLost = errors.New("the lease on the task run was lost")

// RunTask runs a polled task run as a turn and hands the run to it (or,
// against a tasks service without DelegateTaskRun, follows the turn and
// settles the run). It returns an error when the run could not be handed
// over nor settled (its lease then expires and the tasks service records
// it lost).
func (w *Worker) RunTask(ctx context.Context, poll *tasksv1.PollTaskResponse) error {
	t, run, token := poll.GetTask(), poll.GetRunId(), poll.GetLeaseToken()
	session := cmp.Or(t.GetSessionId(), "tasks")
	thread := cmp.Or(t.GetThreadId(), "task-"+t.GetTaskId())
	input := strings.TrimSpace(t.GetSpec().GetObjective())
	if title := t.GetSpec().GetTitle(); title != "" && input == "" {
		input = title
	}
	// Settling is said even when the worker's context ended: bounded, on
	// a context of its own.
	settle := func(f func(context.Context) error) error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return f(rctx)
	}
	fail := func(category, message string, retryable bool) error {
		return settle(func(rctx context.Context) error {
			_, err := w.tasks.FailTask(rctx, &tasksv1.FailTaskRequest{TaskId: t.GetTaskId(), RunId: run, LeaseToken: token, IdempotencyKey: "fail:" + run,
				Error: &tasksv1.TaskError{Category: category, Message: clip(message, 4000), Retryable: retryable}})
			return err
		})
	}
	if input == "" {
		return fail("invalid_input", "the task has no objective or title to run", false)
	}
	sub, err := w.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{
		SessionId: session, ThreadId: thread, IdempotencyKey: "task-run:" + run,
		Input:        []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: input}}},
		Metadata:     map[string]string{"task_id": t.GetTaskId(), "task_run_id": run},
		CreatePolicy: controlv1.CreatePolicy_CREATE_POLICY_CREATE_IF_MISSING, BusyPolicy: controlv1.BusyPolicy_BUSY_POLICY_ENQUEUE,
	})
	if err != nil {
		if ctx.Err() != nil {
			return fail("cancelled", "the worker stopped before the task's turn was submitted", true)
		}
		return fail("invalid_input", "the task's turn was refused: "+status.Convert(err).Message(), status.Code(err) == codes.Unavailable)
	}
	turn := sub.GetTurn()
	if _, err := w.tasks.AppendTaskProgress(ctx, &tasksv1.AppendTaskProgressRequest{TaskId: t.GetTaskId(), RunId: run, LeaseToken: token, IdempotencyKey: "turn:" + run,
		RunState: tasksv1.TaskStatus_TASK_STATUS_RUNNING, Reason: fmt.Sprintf("running as turn %s on thread %s of session %s", turn.GetTurnId(), thread, session)}); err != nil {
		w.cfg.Logger.WarnContext(ctx, "task progress", "task_id", t.GetTaskId(), "error", err)
	}
	// Hand the run to its turn, even when the worker is stopping: the
	// turn goes on without it.
	err = settle(func(rctx context.Context) error {
		_, err := w.tasks.DelegateTaskRun(rctx, &tasksv1.DelegateTaskRunRequest{TaskId: t.GetTaskId(), RunId: run, LeaseToken: token,
			SessionId: turn.GetSessionId(), ThreadId: turn.GetThreadId(), TurnId: turn.GetTurnId(), IdempotencyKey: "delegate:" + run})
		return err
	})
	switch status.Code(err) {
	case codes.OK:
		return nil
	case codes.Unimplemented:
	default:
		// Refused (the lease was lost, the task's cancellation was
		// requested) or not answered: follow the turn under the lease as
		// before; its heartbeat hears a lost lease or a cancel request
		// and ends the turn.
		w.cfg.Logger.WarnContext(ctx, "handing the task run to its turn; following the turn instead", "task_id", t.GetTaskId(), "run_id", run, "error", err)
	}
	return w.followTask(ctx, t, run, token, turn, sub.GetSequence(), fail, settle)
}

// followTask follows the task's turn to its end under the run's lease and
// settles the run (the path for a tasks service without DelegateTaskRun).
func (w *Worker) followTask(ctx context.Context, t *tasksv1.Task, run, token string, turn *controlv1.Turn, from uint64,
	fail func(category, message string, retryable bool) error, settle func(func(context.Context) error) error) error {
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go w.heartbeatTask(tctx, cancel, t.GetTaskId(), run, token, turn)
	end, err := w.awaitTurnEnd(tctx, turn, from)
	if err != nil {
		cause := context.Cause(tctx)
		if cause == nil {
			cause = err // the stream failed on its own (refused, ended)
		}
		// The turn must not go on for a run nobody settles.
		w.interruptTurn(turn, "its task run ended: "+cause.Error())
		if errors.Is(cause, errTaskLeaseLost) {
			return nil // the tasks service records the run lost
		}
		if ctx.Err() != nil {
			return fail("cancelled", "the worker stopped during the task's turn", true)
		}
		return fail("transient", "following the task's turn: "+status.Convert(err).Message(), true)
	}
	if c := end.GetTurnCompleted(); end.GetType() == "turn.completed" {
		return settle(func(rctx context.Context) error {
			_, err := w.tasks.CompleteTask(rctx, &tasksv1.CompleteTaskRequest{TaskId: t.GetTaskId(), RunId: run, LeaseToken: token, IdempotencyKey: "complete:" + run,
				Summary: clip(c.GetSummary(), 8000), NativeStatus: "turn:" + turn.GetTurnId()})
			if status.Code(err) == codes.FailedPrecondition {
				// e.g. acceptance not met: the turn ended, the task did not.
				_, ferr := w.tasks.FailTask(rctx, &tasksv1.FailTaskRequest{TaskId: t.GetTaskId(), RunId: run, LeaseToken: token, IdempotencyKey: "fail:" + run,
					Error: &tasksv1.TaskError{Category: "acceptance_not_met", Message: clip(status.Convert(err).Message(), 4000)}})
				return ferr
			}
			return err
		})
	}
	f := end.GetTurnFailed()
	category, msg := events.TaskFailureOfTurn(turn.GetTurnId(), f)
	return fail(category, msg, f.GetRetryable())
}

// heartbeatTask renews the run's lease; a cancel request interrupts the
// turn (the run then settles as cancelled when the turn ends), a lost
// lease stops following it.
func (w *Worker) heartbeatTask(ctx context.Context, cancel context.CancelCauseFunc, taskID, run, token string, turn *controlv1.Turn) {
	tick := time.NewTicker(w.cfg.LeaseTTL / 3)
	defer tick.Stop()
	interrupted := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		hb, err := w.tasks.HeartbeatTask(ctx, &tasksv1.HeartbeatTaskRequest{TaskId: taskID, RunId: run, LeaseToken: token, LeaseTtl: durationpb.New(w.cfg.LeaseTTL)})
		switch {
		case status.Code(err) == codes.FailedPrecondition || status.Code(err) == codes.NotFound:
			cancel(errTaskLeaseLost)
			return
		case err != nil:
			w.cfg.Logger.WarnContext(ctx, "task heartbeat", "task_id", taskID, "error", err)
		case hb.GetCancelRequested() && !interrupted:
			interrupted = true
			w.interruptTurn(turn, "the task's cancellation was requested")
		}
	}
}

func (w *Worker) interruptTurn(turn *controlv1.Turn, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := w.control.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: turn.GetSessionId(), ThreadId: turn.GetThreadId(),
		TurnId: turn.GetTurnId(), Reason: reason}); err != nil {
		w.cfg.Logger.WarnContext(ctx, "interrupting a task's turn", "turn_id", turn.GetTurnId(), "error", err)
	}
}

// awaitTurnEnd follows the turn's thread from its submission to its end.
func (w *Worker) awaitTurnEnd(ctx context.Context, turn *controlv1.Turn, from uint64) (*eventsv1.RuntimeEvent, error) {
	stream, err := w.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
		SessionId: turn.GetSessionId(), ThreadId: turn.GetThreadId(), TypePrefixes: []string{"turn.completed", "turn.failed"},
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: from, Heartbeat: durationpb.New(5 * time.Second),
	})
	if err != nil {
		return nil, err
	}
	for {
		m, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		if ev := m.GetEvent(); ev.GetTurnId() == turn.GetTurnId() && (ev.GetType() == "turn.completed" || ev.GetType() == "turn.failed") {
			return ev, nil
		}
	}
}
