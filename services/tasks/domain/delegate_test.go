package domain

import (
	"testing"

	"github.com/agentruntime/agentruntime/pkg/fault"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

// A run handed to its turn: the attempt names the turn and is no longer
// leased; the same turn again records nothing, another is refused; a
// cancel request names the turn; the run cannot be lost.
func TestDelegateHandsTheRunToItsTurn(t *testing.T) {
	task := fixture(Running)
	task.Attempts[0].Leased = true
	turn := &tasksv1.RunTurn{SessionId: "s1", ThreadId: "th", TurnId: "turn-1"}
	evs, err := DecideDelegate(task, Delegate{RunID: "run_1", Turn: turn, Now: now})
	if err != nil || len(evs) != 1 || evs[0].GetType() != TypeTaskDelegated || evs[0].GetRunId() != "run_1" ||
		evs[0].GetTaskDelegated().GetTargetKind() != TargetTurn || evs[0].GetTaskDelegated().GetTargetId() != "turn-1" {
		t.Fatalf("DecideDelegate = %v, %v", evs, err)
	}
	task = fold(task, evs)
	a := CurrentAttempt(task)
	if a.GetLeased() || a.GetCarriedBy().GetTurnId() != "turn-1" || task.GetStatus() != Running || CarriedBy(task).GetThreadId() != "th" {
		t.Fatalf("after the hand-over: %v", task)
	}
	if evs, err := DecideDelegate(task, Delegate{RunID: "run_1", Turn: turn, Now: now}); err != nil || len(evs) != 0 {
		t.Fatalf("the same turn again = %v, %v; want nothing", evs, err)
	}
	other := &tasksv1.RunTurn{SessionId: "s1", ThreadId: "th", TurnId: "turn-2"}
	if _, err := DecideDelegate(task, Delegate{RunID: "run_1", Turn: other, Now: now}); !fault.HasReason(err, ReasonRunDelegated) {
		t.Fatalf("another turn = %v, want %s", err, ReasonRunDelegated)
	}
	if _, err := DecideLose(task, "run_1", now); !fault.HasReason(err, ReasonRunDelegated) {
		t.Fatalf("DecideLose = %v, want %s (no lease to lose)", err, ReasonRunDelegated)
	}
	cancel, err := DecideCancel(task, Cancel{Reason: "stop", Now: now})
	if err != nil || cancel[0].GetTaskCancelRequested().GetCarriedBy().GetTurnId() != "turn-1" {
		t.Fatalf("DecideCancel = %v, %v; want the turn named", cancel, err)
	}
	// A cancel requested before the hand-over: the run is not handed over.
	cancelling := fold(fixture(Running), cancel[:1])
	if _, err := DecideDelegate(cancelling, Delegate{RunID: "run_1", Turn: turn, Now: now}); !fault.Is(err, fault.KindPrecondition) {
		t.Fatalf("a hand-over after the cancel request = %v, want refused", err)
	}
	if _, err := DecideDelegate(fixture(Queued), Delegate{RunID: "run_1", Turn: turn, Now: now}); !fault.Is(err, fault.KindPrecondition) {
		t.Fatalf("a hand-over without a run = %v, want refused", err)
	}
}

// A carried run that ends without its turn (a timeout) names the turn on
// the attempt's end, for the control service to interrupt; an end the
// turn itself brought (a failure reported by the runtime) does not.
func TestARunEndedWithoutItsTurnNamesIt(t *testing.T) {
	task := fixture(Running)
	evs, err := DecideDelegate(task, Delegate{RunID: "run_1", Turn: &tasksv1.RunTurn{SessionId: "s1", ThreadId: "th", TurnId: "turn-1"}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	task = fold(task, evs)
	timedOut, err := DecideTimeout(task, "run_1", "run timeout", now)
	if err != nil || timedOut[0].GetTaskAttemptFailed().GetCarriedBy().GetTurnId() != "turn-1" {
		t.Fatalf("DecideTimeout = %v, %v; want the turn named", timedOut, err)
	}
	failed, err := DecideFail(task, Fail{RunID: "run_1", Error: &tasksv1.TaskError{Category: "tool_error"}, Now: now})
	if err != nil || failed[0].GetTaskAttemptFailed().GetCarriedBy() != nil {
		t.Fatalf("DecideFail = %v, %v; want no turn named", failed, err)
	}
}
