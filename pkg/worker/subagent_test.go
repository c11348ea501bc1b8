package worker_test

import (
	"context"
	"strings"
	"testing"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// The parent's script delegates; the child's (matched on the objective)
// reads the README and answers. One worker runs both turns.
const delegationScript = `
model: scripted
turns:
  - match: "count the readme"
    steps:
      - text: "Reading it myself."
        tool_calls: [{name: read_file, arguments: {path: README.md}}]
      - text: "The README has one line."
  - match: "summarize"
    steps:
      - text: "Delegating."
        tool_calls: [{name: spawn_agent, arguments: {objective: "count the README's lines", role: reader, timeout_ms: 60000}}]
      - text: "My subagent says the README has one line."
`

// A delegation end to end: the parent turn's spawn_agent creates a
// subagent with its own child thread through the control service, the
// child's turn is claimed and run by a worker, its end completes the
// subagent, and the parent gets the child's summary and finishes.
func TestSubagentDelegation(t *testing.T) {
	rt := startRuntime(t)
	rt.startWorker(t, scripted(t, delegationScript), workspace(t))
	tl := rt.follow(t, "s1")
	ctx := context.Background()
	if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "parent", Input: text("summarize the workspace")}); err != nil {
		t.Fatal(err)
	}
	// Delegating is asked for, like running a command.
	respond(t, rt, tl.until("action.required").GetActionId(), "allow_once")
	spawned := tl.until("subagent.spawned")
	child := spawned.GetSubagentSpawned().GetChildThreadId()
	if spawned.GetThreadId() != "main" || spawned.GetTurnId() != "parent" || child == "" || spawned.GetSubagentSpawned().GetRole() != "reader" {
		t.Fatalf("subagent.spawned = %v", spawned)
	}
	done := tl.until("subagent.completed")
	if done.GetSubagentId() != spawned.GetSubagentId() || done.GetThreadId() != child || done.GetSubagentCompleted().GetSummary() != "The README has one line." {
		t.Fatalf("subagent.completed = %v", done)
	}
	end := tl.until("turn.completed")
	for end.GetTurnId() != "parent" {
		end = tl.until("turn.completed")
	}
	if end.GetTurnCompleted().GetSummary() != "My subagent says the README has one line." {
		t.Fatalf("parent turn.completed = %v", end)
	}
	// The child's turn ran on its own thread, read the file, and ended
	// before the parent's tool result said so.
	var childTypes, order []string
	var result *eventsv1.RuntimeEvent
	for _, ev := range tl.seen {
		if ev.GetThreadId() == child {
			childTypes = append(childTypes, ev.GetType())
		}
		if ev.GetType() == "tool.result" && ev.GetThreadId() == "main" {
			result = ev
		}
		order = append(order, ev.GetThreadId()+":"+ev.GetType())
	}
	inOrder(t, childTypes, "thread.started", "turn.submitted", "turn.started", "tool.started", "tool.result", "turn.completed", "subagent.completed")
	inOrder(t, order, "main:subagent.spawned", child+":turn.completed", "main:tool.result", "main:turn.completed")
	if !strings.Contains(result.GetToolResult().GetPreview(), "completed: The README has one line.") {
		t.Fatalf("spawn_agent answered %q", result.GetToolResult().GetPreview())
	}
	subs, err := rt.control.ListSubagents(ctx, &controlv1.ListSubagentsRequest{SessionId: "s1", ThreadId: "main", MinSequence: end.GetSequence()})
	if err != nil || len(subs.GetSubagents()) != 1 || subs.GetSubagents()[0].GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_COMPLETED || subs.GetSubagents()[0].GetParentTurnId() != "parent" {
		t.Fatalf("ListSubagents = %v, %v", subs, err)
	}
}

const stuckChildScript = `
model: scripted
turns:
  - match: "write the notes"
    steps:
      - tool_calls: [{name: write_file, arguments: {path: NOTES.md, content: "notes"}}]
      - text: "Wrote them."
  - match: "delegate"
    steps:
      - tool_calls: [{name: spawn_agent, arguments: {objective: "write the notes", timeout_ms: 1500}}]
      - text: "The subagent did not finish; giving up."
`

// A subagent that does not finish in time (its write waits for an
// approval nobody gives) is closed and its turn interrupted; the parent
// is told and goes on.
func TestSubagentThatTimesOutIsClosedAndInterrupted(t *testing.T) {
	rt := startRuntime(t)
	rt.startWorker(t, scripted(t, stuckChildScript), workspace(t))
	tl := rt.follow(t, "s1")
	ctx := context.Background()
	if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "parent", Input: text("delegate the notes")}); err != nil {
		t.Fatal(err)
	}
	respond(t, rt, tl.until("action.required").GetActionId(), "allow_once") // the spawn
	child := tl.until("subagent.spawned").GetSubagentSpawned().GetChildThreadId()
	// The child's turn fails (interrupted), so read the stream directly.
	var failed, end, childEnd *eventsv1.RuntimeEvent
	for end == nil || childEnd == nil {
		m, err := tl.stream.Recv()
		if err != nil {
			t.Fatalf("after %v: %v", testkit.Types(tl.seen), err)
		}
		ev := m.GetEvent()
		if ev == nil {
			continue
		}
		tl.seen = append(tl.seen, ev)
		switch {
		case ev.GetThreadId() == "main" && ev.GetType() == "tool.failed":
			failed = ev
		case ev.GetTurnId() == "parent" && (ev.GetType() == "turn.completed" || ev.GetType() == "turn.failed"):
			end = ev
		case ev.GetThreadId() == child && ev.GetType() == "subagent.failed":
			childEnd = ev
		}
	}
	if failed.GetToolFailed().GetCategory() != "timeout" {
		t.Fatalf("tool.failed = %v", failed)
	}
	if end.GetTurnCompleted().GetSummary() != "The subagent did not finish; giving up." {
		t.Fatalf("parent's end = %v", end)
	}
	var order []string
	for _, ev := range tl.seen {
		order = append(order, ev.GetThreadId()+":"+ev.GetType())
	}
	// The child's turn is parked on its approval (it ends at once) or
	// still held (interrupt_requested first): either way it ends failed.
	inOrder(t, order, "main:subagent.spawned", child+":action.required", "main:subagent.closed", "main:tool.failed")
	inOrder(t, order, child+":action.required", child+":turn.failed", child+":subagent.failed")
	// Closed by the parent it stays, though its turn ended after the close.
	subs, err := rt.control.ListSubagents(ctx, &controlv1.ListSubagentsRequest{SessionId: "s1", ThreadId: "main", MinSequence: max(end.GetSequence(), childEnd.GetSequence())})
	if err != nil || len(subs.GetSubagents()) != 1 || subs.GetSubagents()[0].GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_CLOSED {
		t.Fatalf("ListSubagents = %v, %v", subs, err)
	}
}
