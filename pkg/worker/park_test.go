package worker_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// waitsScript: "w1".."w3" each ask to write a file of their own (an
// approval); "slow" runs a two-second shell command, then reads the
// README; anything else answers at once.
const waitsScript = `
model: scripted
turns:
  - match: w1
    steps:
      - tool_calls: [{name: write_file, arguments: {path: w1.md, content: one}}]
      - text: wrote w1
  - match: w2
    steps:
      - tool_calls: [{name: write_file, arguments: {path: w2.md, content: two}}]
      - text: wrote w2
  - match: w3
    steps:
      - tool_calls: [{name: write_file, arguments: {path: w3.md, content: three}}]
      - text: wrote w3
  - match: slow
    steps:
      - tool_calls: [{name: shell, arguments: {command: "sleep 2"}}]
      - tool_calls: [{name: read_file, arguments: {path: README.md}}]
      - text: slept and read
  - steps:
      - text: hello at once
`

// startStoppableWorker runs a worker until the returned stop is called
// (a graceful stop: Run's context ends) or the test ends.
func (rt *runtime) startStoppableWorker(t *testing.T, id, root string, mod ...func(*worker.Config)) (stop func()) {
	t.Helper()
	cfg := worker.Config{WorkerID: id, Conn: rt.conn, Provider: scripted(t, waitsScript), DefaultModel: "scripted",
		Sandbox: tools.Sandbox{Root: root, WriteRoots: []string{root}}, LeaseTTL: 3 * time.Second, ClaimWait: time.Second,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	for _, m := range mod {
		m(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.New(cfg).Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

func (rt *runtime) submit(t *testing.T, thread, turn, input string) {
	t.Helper()
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: thread, TurnId: turn, Input: text(input)}); err != nil {
		t.Fatal(err)
	}
}

// untilTurn follows the timeline to the end of a turn and answers its
// approvals with allow_once when allow (otherwise they are left).
func (tl *timeline) untilTurnEnds(turn string) *eventsv1.RuntimeEvent {
	tl.t.Helper()
	for {
		m, err := tl.stream.Recv()
		if err != nil {
			tl.t.Fatalf("waiting for the end of %s after %v: %v", turn, testkit.Types(tl.seen), err)
		}
		ev := m.GetEvent()
		if ev == nil {
			continue
		}
		tl.seen = append(tl.seen, ev)
		if ev.GetTurnId() == turn && (ev.GetType() == "turn.completed" || ev.GetType() == "turn.failed") {
			return ev
		}
	}
}

// count is how many events of a type the timeline saw for a turn.
func (tl *timeline) count(turn, typ string) int {
	n := 0
	for _, ev := range tl.seen {
		if ev.GetTurnId() == turn && ev.GetType() == typ {
			n++
		}
	}
	return n
}

// A turn waiting for a person holds no worker slot: with more unanswered
// approvals than the worker has slots, a turn that needs none completes
// at once; the waiting turns then finish when answered, each approved
// write done once, by a run that resumed them.
func TestWaitingTurnsHoldNoSlot(t *testing.T) {
	rt := startRuntime(t)
	root := workspace(t)
	rt.startStoppableWorker(t, "w1", root, func(c *worker.Config) { c.MaxTurns = 1 })
	tl := rt.follow(t, "s1")
	waiting := map[string]string{} // turn -> action
	for i, in := range []string{"w1", "w2", "w3"} {
		rt.submit(t, "thread-"+in, "turn-"+in, "please "+in)
		for len(waiting) <= i {
			ev := tl.until("action.required")
			waiting[ev.GetTurnId()] = ev.GetActionId()
		}
	}
	rt.submit(t, "quick", "turn-quick", "hello")
	if end := tl.untilTurnEnds("turn-quick"); end.GetType() != "turn.completed" {
		t.Fatalf("the turn that needs no approval ended %v", end)
	}
	for turn, action := range waiting {
		respond(t, rt, action, "allow_once")
		if end := tl.untilTurnEnds(turn); end.GetType() != "turn.completed" {
			t.Fatalf("%s ended %v", turn, end)
		}
	}
	for _, in := range []string{"w1", "w2", "w3"} {
		turn := "turn-" + in
		if got := tl.count(turn, "tool.result"); got != 1 {
			t.Fatalf("%s: %d tool.result, want the approved write once", turn, got)
		}
		if _, err := os.Stat(filepath.Join(root, in+".md")); err != nil {
			t.Fatalf("%s: the approved write did not happen: %v", turn, err)
		}
		at, err := rt.control.GetTurnAttempts(context.Background(), &controlv1.GetTurnAttemptsRequest{TurnId: turn, MinSequence: tl.seen[len(tl.seen)-1].GetSequence()})
		if err != nil {
			t.Fatal(err)
		}
		// The first run parked; the last completed it (a loaded machine may
		// lose a run in between to a lapsed lease: that is retried).
		runs := at.GetAttempts().GetAttempts()
		if len(runs) < 2 || runs[0].GetStatus() != controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_PARKED || runs[len(runs)-1].GetStatus() != controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_COMPLETED {
			t.Fatalf("%s: runs %v, want the first parked and the last completed", turn, runs)
		}
	}
}

// A turn waiting for an approval survives a graceful stop of its worker:
// another worker, started later, resumes it once the approval is given,
// and the approved write happens once. Nothing fails and no run is lost.
func TestAWaitingTurnSurvivesItsWorkersStop(t *testing.T) {
	rt := startRuntime(t)
	root := workspace(t)
	stop := rt.startStoppableWorker(t, "first", root)
	tl := rt.follow(t, "s1")
	rt.submit(t, "main", "turn-w1", "please w1")
	action := tl.until("action.required").GetActionId()
	for tl.until("run.status").GetRunStatus().GetPhase() != "parked" {
	}
	stop()
	respond(t, rt, action, "allow_once")
	rt.startStoppableWorker(t, "second", root)
	end := tl.untilTurnEnds("turn-w1")
	if end.GetType() != "turn.completed" {
		t.Fatalf("the turn ended %v after %v", end, testkit.Types(tl.seen))
	}
	var resumedBy string
	for _, ev := range tl.seen {
		if ev.GetType() == "turn.started" {
			resumedBy = ev.GetTurnStarted().GetWorkerId()
		}
	}
	if resumedBy != "second" {
		t.Fatalf("the turn was last started by %q, want the second worker", resumedBy)
	}
	if n := tl.count("turn-w1", "tool.result"); n != 1 {
		t.Fatalf("%d tool.result, want the approved write once", n)
	}
	if b, err := os.ReadFile(filepath.Join(root, "w1.md")); err != nil || string(b) != "one" {
		t.Fatalf("w1.md = %q, %v", b, err)
	}
}

// A worker stopped in the middle of a turn hands it back at the next step
// boundary (drain): the call that was running (a shell command, allowed
// by a person) completes once, and
// another worker continues the turn from there; no run fails or is lost.
func TestADrainingWorkerHandsItsTurnBack(t *testing.T) {
	rt := startRuntime(t)
	root := workspace(t)
	stop := rt.startStoppableWorker(t, "first", root)
	tl := rt.follow(t, "s1")
	rt.submit(t, "main", "turn-slow", "slow")
	// The shell command asks first; once allowed, it runs (sandbox.applied
	// comes right before) and the worker is stopped while it does.
	respond(t, rt, tl.until("action.required").GetActionId(), "allow_once")
	for tl.until("run.status").GetRunStatus().GetPhase() != "resumed" {
	}
	tl.until("sandbox.applied") // the worker's, right before the command runs
	stop()                      // returns once the turn is handed back
	rt.startStoppableWorker(t, "second", root)
	end := tl.untilTurnEnds("turn-slow")
	if end.GetType() != "turn.completed" || end.GetTurnCompleted().GetSummary() != "slept and read" {
		t.Fatalf("the turn ended %v after %v", end, testkit.Types(tl.seen))
	}
	if n := tl.count("turn-slow", "tool.result"); n != 2 {
		t.Fatalf("%d tool.result, want 2: the shell command once and the read once (%v)", n, testkit.Types(tl.seen))
	}
	var parked *eventsv1.RuntimeEvent
	for _, ev := range tl.seen {
		if ev.GetRunStatus().GetPhase() == "parked" {
			parked = ev
		}
	}
	if parked.GetRunStatus().GetMetadata()["reason"] != "drain" {
		t.Fatalf("park = %v, want a hand back for a drain (%v)", parked, testkit.Types(tl.seen))
	}
	inOrder(t, testkit.Types(tl.seen), "tool.started", "sandbox.applied", "tool.result", "run.status", "turn.started", "tool.started", "tool.result", "turn.completed")
}

// A deadline fires with no worker running: the runtime resolves the
// action timed out (a fact) and applies its fallback; cancel_turn ends the
// parked turn and nothing is left to claim. The "worker" here is the
// protocol spoken by hand: claim, ask, store a checkpoint, park, go away.
func TestADeadlineFiresWithNoWorkerRunning(t *testing.T) {
	rt := startRuntime(t)
	tl := rt.follow(t, "s1")
	ctx := context.Background()
	rt.submit(t, "main", "turn-d", "hello")
	claim, err := rt.control.ClaimTurn(ctx, &controlv1.ClaimTurnRequest{WorkerId: "by-hand", Wait: durationpb.New(10 * time.Second)})
	if err != nil || claim.GetTurn().GetTurnId() != "turn-d" {
		t.Fatalf("ClaimTurn = %v, %v", claim, err)
	}
	act, err := rt.control.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn-d",
		ActionType: "input", Prompt: "Which one?", Decisions: []string{"a", "b"}, DecisionOnTimeout: "cancel_turn", Timeout: durationpb.New(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := rt.control.StoreOutput(ctx, &controlv1.StoreOutputRequest{TurnId: "turn-d", ToolCallId: "checkpoint:" + claim.GetRunId(), Content: []byte(`{"version":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.control.ReportEvents(ctx, &controlv1.ReportEventsRequest{RunId: claim.GetRunId(), LeaseToken: claim.GetLeaseToken(), Events: []*eventsv1.RuntimeEvent{{
		Type: "run.status", TurnId: "turn-d", RunId: claim.GetRunId(),
		Payload: &eventsv1.RuntimeEvent_RunStatus{RunStatus: &eventsv1.RunStatus{Phase: "parked", Checkpoints: []string{cp.GetOutput().GetUri()},
			Metadata: map[string]string{"reason": "wait", "action_ids": act.GetAction().GetActionId()}}},
	}}}); err != nil {
		t.Fatal(err)
	}
	end := tl.untilTurnEnds("turn-d")
	if end.GetType() != "turn.failed" || end.GetTurnFailed().GetOutcome() != eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED {
		t.Fatalf("the turn ended %v, want cancelled by the fallback", end)
	}
	var resolved *eventsv1.RuntimeEvent
	for _, ev := range tl.seen {
		if ev.GetType() == "action.resolved" {
			resolved = ev
		}
	}
	if r := resolved.GetActionResolved(); r.GetOutcome() != eventsv1.ActionOutcome_ACTION_OUTCOME_TIMED_OUT || r.GetDecision() != "cancel_turn" || r.GetResponder() != "runtime" {
		t.Fatalf("action.resolved = %v, want timed out by the runtime with the fallback", resolved)
	}
	inOrder(t, testkit.Types(tl.seen), "action.required", "run.status", "action.resolved", "turn.failed")
}
