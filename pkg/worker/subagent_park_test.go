package worker_test

import (
	"context"
	"strings"
	"testing"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker"
)

// untilEvent follows the timeline to the first event ok accepts.
func (tl *timeline) untilEvent(what string, ok func(*eventsv1.RuntimeEvent) bool) *eventsv1.RuntimeEvent {
	tl.t.Helper()
	for {
		m, err := tl.stream.Recv()
		if err != nil {
			tl.t.Fatalf("waiting for %s after %v: %v", what, testkit.Types(tl.seen), err)
		}
		if ev := m.GetEvent(); ev != nil {
			tl.seen = append(tl.seen, ev)
			if ok(ev) {
				return ev
			}
		}
	}
}

// parkedOnSubagent follows the timeline to the parent's park that waits
// for a subagent, and answers the subagent's id.
func (tl *timeline) parkedOnSubagent(turn string) string {
	tl.t.Helper()
	ev := tl.untilEvent("the parent's park on its subagent", func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetTurnId() == turn && ev.GetRunStatus().GetPhase() == "parked" && ev.GetRunStatus().GetMetadata()["subagent_ids"] != ""
	})
	return ev.GetRunStatus().GetMetadata()["subagent_ids"]
}

// A parent waiting for its subagent holds no slot: on a worker with one,
// the parent parks, the same worker runs the child's turn, and the
// child's end resumes the parent, which answers with the child's summary.
// With the wait held in place the child could not run until the wait
// timed out.
func TestAParentWaitingForItsSubagentHoldsNoSlot(t *testing.T) {
	rt := startRuntime(t)
	rt.startStoppableWorker(t, "w1", workspace(t), func(c *worker.Config) {
		c.MaxTurns, c.Provider = 1, scripted(t, delegationScript)
	})
	tl := rt.follow(t, "s1")
	rt.submit(t, "main", "parent", "summarize the workspace")
	respond(t, rt, tl.until("action.required").GetActionId(), "allow_once") // the spawn
	sub := tl.parkedOnSubagent("parent")
	end := tl.untilTurnEnds("parent")
	if end.GetTurnCompleted().GetSummary() != "My subagent says the README has one line." {
		t.Fatalf("the parent ended %v after %v", end, testkit.Types(tl.seen))
	}
	var order []string
	var result *eventsv1.RuntimeEvent
	for _, ev := range tl.seen {
		order = append(order, ev.GetTurnId()+":"+ev.GetType())
		if ev.GetTurnId() == "parent" && ev.GetType() == "tool.result" {
			result = ev
		}
	}
	// The child's turn ran while the parent was parked, on the one slot.
	inOrder(t, order, "parent:subagent.spawned", "parent:run.status", "parent:subagent.status", "parent:turn.started", "parent:tool.result", "parent:turn.completed")
	if tl.count("parent", "tool.result") != 1 || !strings.Contains(result.GetToolResult().GetPreview(), "completed: The README has one line.") {
		t.Fatalf("spawn_agent answered %v (%d results)", result, tl.count("parent", "tool.result"))
	}
	at, err := rt.control.GetTurnAttempts(context.Background(), &controlv1.GetTurnAttemptsRequest{TurnId: "parent", MinSequence: end.GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	var waited bool
	for _, run := range at.GetAttempts().GetAttempts() {
		for _, w := range run.GetWaitsFor() {
			waited = waited || w == sub && run.GetStatus() == controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_PARKED
		}
	}
	if !waited || len(at.GetAttempts().GetEndedSubagentIds()) != 1 || at.GetAttempts().GetEndedSubagentIds()[0] != sub {
		t.Fatalf("attempts %v: want a parked run waiting for %s, and it ended", at.GetAttempts(), sub)
	}
}

// The wait's deadline is the runtime's: with the parent parked and no
// worker running, the subagent that does not finish in time is closed and
// its turn interrupted; a worker started later resumes the parent, whose
// model is told the subagent timed out.
func TestASubagentWaitTimesOutWithNoWorkerRunning(t *testing.T) {
	rt := startRuntime(t)
	root := workspace(t)
	// Long enough for the parent to park and its worker to stop on a
	// loaded machine: the deadline must fire with no worker running.
	script := strings.ReplaceAll(stuckChildScript, "timeout_ms: 1500", "timeout_ms: 6000")
	stop := rt.startStoppableWorker(t, "first", root, func(c *worker.Config) { c.Provider = scripted(t, script) })
	tl := rt.follow(t, "s1")
	rt.submit(t, "main", "parent", "delegate the notes")
	respond(t, rt, tl.until("action.required").GetActionId(), "allow_once") // the spawn
	// The parent parks on its subagent; the child asks for its write and
	// parks on it (in either order); nobody answers.
	var sub string
	childAsked := false
	tl.untilEvent("the parent's park and the child's approval", func(ev *eventsv1.RuntimeEvent) bool {
		if ev.GetTurnId() == "parent" && ev.GetRunStatus().GetPhase() == "parked" {
			sub = ev.GetRunStatus().GetMetadata()["subagent_ids"]
		}
		childAsked = childAsked || ev.GetType() == "action.required" && ev.GetTurnId() != "parent"
		return sub != "" && childAsked
	})
	stop()
	closed := tl.untilEvent("the subagent's close", func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetType() == "subagent.closed" && ev.GetSubagentId() == sub
	})
	if r := closed.GetSubagentClosed().GetReason(); r != "its parent's wait for it timed out" {
		t.Fatalf("subagent.closed = %v", closed)
	}
	rt.startStoppableWorker(t, "second", root, func(c *worker.Config) { c.Provider = scripted(t, script) })
	end := tl.untilTurnEnds("parent")
	if end.GetTurnCompleted().GetSummary() != "The subagent did not finish; giving up." {
		t.Fatalf("the parent ended %v after %v", end, testkit.Types(tl.seen))
	}
	var failed *eventsv1.RuntimeEvent
	resumedBy := ""
	for _, ev := range tl.seen {
		switch {
		case ev.GetTurnId() == "parent" && ev.GetType() == "tool.failed":
			failed = ev
		case ev.GetTurnId() == "parent" && ev.GetType() == "turn.started":
			resumedBy = ev.GetTurnStarted().GetWorkerId()
		}
	}
	if failed.GetToolFailed().GetCategory() != "timeout" || resumedBy != "second" {
		t.Fatalf("spawn_agent failed %v; the parent was last started by %q, want the second worker", failed, resumedBy)
	}
}

// Interrupting a parent parked on its subagent ends the parent at once
// and closes the subagent, whose turn is interrupted: nothing keeps
// running for a parent that ended.
func TestInterruptingAParkedParentClosesItsSubagent(t *testing.T) {
	rt := startRuntime(t)
	rt.startStoppableWorker(t, "w1", workspace(t), func(c *worker.Config) {
		c.Provider = scripted(t, strings.ReplaceAll(stuckChildScript, "timeout_ms: 1500", "timeout_ms: 600000"))
	})
	tl := rt.follow(t, "s1")
	rt.submit(t, "main", "parent", "delegate the notes")
	respond(t, rt, tl.until("action.required").GetActionId(), "allow_once") // the spawn
	sub := tl.parkedOnSubagent("parent")
	if _, err := rt.control.InterruptTurn(context.Background(), &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "parent", Reason: "changed my mind"}); err != nil {
		t.Fatal(err)
	}
	if end := tl.untilTurnEnds("parent"); end.GetTurnFailed().GetOutcome() != eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED {
		t.Fatalf("the parent ended %v", end)
	}
	closed := tl.untilEvent("the subagent's close", func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetType() == "subagent.closed" && ev.GetSubagentId() == sub
	})
	if r := closed.GetSubagentClosed().GetReason(); r != "its parent turn ended while it waited" {
		t.Fatalf("subagent.closed = %v", closed)
	}
	tl.untilEvent("the child's end", func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetType() == "subagent.failed" && ev.GetSubagentId() == sub
	})
	var cancelled bool
	for _, ev := range tl.seen {
		cancelled = cancelled || ev.GetTurnId() == "parent" && ev.GetType() == "tool.failed" && ev.GetToolFailed().GetCategory() == "cancelled"
	}
	if !cancelled {
		t.Fatalf("the parked spawn_agent call did not end cancelled: %v", testkit.Types(tl.seen))
	}
}
