package worker_test

import (
	"context"
	"strings"
	"testing"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
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
	if err != nil || len(subs.GetSubagents()) != 1 || subs.GetSubagents()[0].GetStatus() != "completed" || subs.GetSubagents()[0].GetParentTurnId() != "parent" {
		t.Fatalf("ListSubagents = %v, %v", subs, err)
	}
}
