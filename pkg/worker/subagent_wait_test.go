package worker_test

import (
	"context"
	"testing"
	"time"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

const waitingChildScript = `
model: scripted
turns:
  - match: "write the notes"
    steps:
      - tool_calls: [{name: write_file, arguments: {path: NOTES.md, content: "notes"}}]
      - text: "Wrote them."
  - match: "delegate"
    steps:
      - tool_calls: [{name: spawn_agent, arguments: {objective: "write the notes", timeout_ms: 60000}}]
      - text: "The subagent wrote the notes."
`

// The spec: "Waiting, sending input, failure, and close events are visible
// without parsing child prose". A subscription filtered to the parent's
// thread sees the subagent wait for an approval (subagent.status
// waiting_permission, and the read model says so), the parent's wait
// (WaitSubagents recorded), the subagent run again and its outcome
// (subagent.completed, a fact of the child's thread naming the parent).
func TestSubagentWaitingIsVisibleOnTheParentThread(t *testing.T) {
	rt := startRuntime(t)
	rt.startWorker(t, scripted(t, waitingChildScript), workspace(t))
	all := rt.follow(t, "s1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ps, err := rt.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", ThreadId: "main", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	if err != nil {
		t.Fatal(err)
	}
	parent := &timeline{t: t, stream: ps}
	if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "parent", Input: text("delegate the notes")}); err != nil {
		t.Fatal(err)
	}
	respond(t, rt, all.until("action.required").GetActionId(), "allow_once") // the spawn
	sub := parent.until("subagent.spawned").GetSubagentId()
	childAsk := all.until("action.required") // the child's write
	waiting := parent.until("subagent.status")
	for waiting.GetSubagentStatus().GetStatus() != "waiting_permission" {
		waiting = parent.until("subagent.status")
	}
	if waiting.GetSubagentId() != sub || waiting.GetThreadId() != "main" {
		t.Fatalf("subagent.status = %v", waiting)
	}
	got, err := rt.control.ListSubagents(ctx, &controlv1.ListSubagentsRequest{SessionId: "s1", ThreadId: "main", MinSequence: waiting.GetSequence()})
	if err != nil || len(got.GetSubagents()) != 1 || got.GetSubagents()[0].GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_WAITING_PERMISSION {
		t.Fatalf("ListSubagents while the child waits = %v, %v", got, err)
	}
	respond(t, rt, childAsk.GetActionId(), "allow_once")
	done := parent.until("subagent.completed")
	if done.GetSubagentId() != sub || done.GetSubagentCompleted().GetSummary() != "Wrote them." {
		t.Fatalf("subagent.completed = %v", done)
	}
	parent.until("turn.completed")
	var statuses []string
	for _, ev := range parent.seen {
		if s := ev.GetSubagentStatus(); s != nil && ev.GetType() == "subagent.status" {
			statuses = append(statuses, s.GetStatus()+"/"+s.GetReason()[:min(len(s.GetReason()), 9)])
		}
		if ev.GetThreadId() != "main" && ev.GetType() != "subagent.completed" {
			t.Errorf("the parent's subscription got %s of thread %s", ev.GetType(), ev.GetThreadId())
		}
	}
	inOrder(t, statuses, "running/waited_on", "waiting_permission/action pe", "running/action pe") // perm_..., the approval action's id
}
