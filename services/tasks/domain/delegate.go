// A run handed to the turn that carries it (DelegateTaskRun).

package domain

import (
	"fmt"
	"time"

	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

// TargetTurn is the task.delegated target_kind of a run handed to a turn.
const TargetTurn = "turn"

// ReasonRunDelegated: a report on a run a turn carries; the runtime
// settles it when the turn ends.
const ReasonRunDelegated = "RUN_DELEGATED"

// Delegate is the delegate_task_run command.
type Delegate struct {
	RunID string
	Turn  *tasksv1.RunTurn
	Now   time.Time
}

// DecideDelegate hands the active run to its turn: task.delegated (kind
// "turn"), which folds into the attempt as carried_by and clears leased.
// The same turn again records nothing; another turn is refused.
func DecideDelegate(t *tasksv1.Task, d Delegate) ([]*eventsv1.RuntimeEvent, error) {
	a, err := checkRun(t, CmdProgress, d.RunID)
	if err != nil {
		return nil, err
	}
	if c := a.GetCarriedBy(); c != nil {
		if c.GetTurnId() == d.Turn.GetTurnId() {
			return nil, nil
		}
		return nil, RunDelegated(t, a)
	}
	if t.GetCancelRequested() {
		// The cancel request named no turn to interrupt: the worker that
		// holds the run hears it (HeartbeatTask) and ends the turn itself.
		return nil, &fault.Error{Kind: fault.KindPrecondition, Reason: ReasonIllegalTransition, Subject: "task/" + t.GetTaskId(),
			Message:  "the task's cancellation was requested: its run is not handed to a turn; interrupt the turn and settle the run",
			Metadata: map[string]string{"run_id": a.GetRunId(), "status": StatusName(t.GetStatus())}}
	}
	ev := taskEvent(t, TypeTaskDelegated, d.Now)
	ev.RunId, ev.AttemptId = a.GetRunId(), a.GetAttemptId()
	ev.Payload = &eventsv1.RuntimeEvent_TaskDelegated{TaskDelegated: &eventsv1.TaskDelegated{
		Relation: tasksv1.EdgeRelation_EDGE_RELATION_ASSIGNED_THREAD, TargetKind: TargetTurn, TargetId: d.Turn.GetTurnId(),
		Reason: fmt.Sprintf("run %s carried by turn %s on thread %s", a.GetRunId(), d.Turn.GetTurnId(), d.Turn.GetThreadId()),
		Turn:   d.Turn,
	}}
	return []*eventsv1.RuntimeEvent{ev}, nil
}

// RunDelegated is the refusal of a worker's report on a run a turn carries.
func RunDelegated(t *tasksv1.Task, a *tasksv1.Attempt) error {
	return &fault.Error{Kind: fault.KindPrecondition, Reason: ReasonRunDelegated, Subject: "task/" + t.GetTaskId(),
		Message:  fmt.Sprintf("run %s is carried by turn %s; it settles when that turn ends", a.GetRunId(), a.GetCarriedBy().GetTurnId()),
		Metadata: map[string]string{"run_id": a.GetRunId(), "turn_id": a.GetCarriedBy().GetTurnId()},
	}
}

// CarriedBy is the turn that carries the task's active run, nil when none.
func CarriedBy(t *tasksv1.Task) *tasksv1.RunTurn {
	if a := CurrentAttempt(t); a.GetStatus() == tasksv1.RunStatus_RUN_STATUS_RUNNING {
		return a.GetCarriedBy()
	}
	return nil
}

func applyDelegated(t *tasksv1.Task, ev *eventsv1.RuntimeEvent) {
	d := ev.GetTaskDelegated()
	if d.GetTargetKind() != TargetTurn {
		return
	}
	if a := attempt(t, ev.GetRunId()); a != nil {
		a.CarriedBy = d.GetTurn()
		a.Leased = false
	}
}
