package worker_test

import (
	"context"
	"testing"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// Reports the control service appended but answered Aborted or Unavailable
// (a conflict that outlasted its retries, a restart between append and
// answer) are retried with the same event ids: the turn completes in its
// first attempt and every fact is in the log once. Here every report's
// first attempt fails that way, turn.started and turn.completed included.
func TestTransientReportFailuresAreRetriedWithTheSameIDs(t *testing.T) {
	rt := startRuntime(t)
	rt.failReports.Store(-1)
	root := workspace(t)
	rt.startWorker(t, scripted(t, demoScript), root)
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn1", Input: text("write notes")}); err != nil {
		t.Fatal(err)
	}
	respond(t, rt, tl.until("action.required").GetActionId(), "allow_once")
	done := tl.until("turn.completed")
	at, err := rt.control.GetTurnAttempts(context.Background(), &controlv1.GetTurnAttemptsRequest{TurnId: "turn1", MinSequence: done.GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	// The approval parks the turn (a parked run, then the run that
	// resumed it); no run was lost.
	runs := at.GetAttempts().GetAttempts()
	for i, a := range runs {
		want := controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_PARKED
		if i == len(runs)-1 {
			want = controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_COMPLETED
		}
		if a.GetStatus() != want {
			t.Fatalf("run %d of %d is %v, want %v: the worker abandoned its turn (%v)", i+1, len(runs), a.GetStatus(), want, runs)
		}
	}
	seen := map[string]string{}
	for _, ev := range tl.seen {
		if prev, dup := seen[ev.GetEventId()]; dup {
			t.Fatalf("event %s (%s) appended twice (first as %s)", ev.GetEventId(), ev.GetType(), prev)
		}
		seen[ev.GetEventId()] = ev.GetType()
	}
	inOrder(t, testkit.Types(tl.seen), "turn.started", "model.delta", "tool.result", "tool.result", "turn.completed")
}
