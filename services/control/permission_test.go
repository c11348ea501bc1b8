package control_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// The tool path of the approval gate across services: the permission
// service's permission.requested becomes an action with the same id, and
// the human's answer comes back as action.resolved, through the log only.
func TestPermissionRequestBecomesAnAction(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	h.report(ctx, started(tu.TurnId))
	sub := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"action."}, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})

	request := func(actionID, turnID string) {
		t.Helper()
		ev := &eventsv1.RuntimeEvent{Type: "permission.requested", SessionId: "s1", ThreadId: "th1", TurnId: turnID, ActionId: actionID,
			StepId: "step_1", ToolCallId: "call_1",
			Payload: &eventsv1.RuntimeEvent_PermissionRequested{PermissionRequested: &eventsv1.PermissionRequested{
				EvaluationId: "pe_1", Prompt: "Allow shell: rm -rf build/?", Name: "shell", ArgumentsPreview: "rm -rf build/",
				Decisions: []string{"allow_once", "allow_session", "deny"}, Timeout: durationpb.New(time.Minute), DecisionOnTimeout: "deny", Destructive: true,
			}}}
		agg := eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "permission", ID: actionID}
		if _, err := h.log.Append(context.Background(), agg, eventlog.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	request("act_perm1", tu.TurnId)
	req := sub.until("action.required")
	if req.ActionId != "act_perm1" || req.ToolCallId != "call_1" || req.GetActionRequired().GetActionType() != "permission" ||
		req.GetActionRequired().GetRequestedBy() != "permission" || req.GetActionRequired().GetContext()["destructive"] != "true" {
		t.Fatalf("action.required %v", req)
	}
	th := h.threadRead(ctx, "s1", "th1", req.Sequence)
	if th.Status != "waiting_permission" || th.Permission.GetState() != "known" {
		t.Fatalf("thread %v", th)
	}
	resp, err := h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: "act_perm1", Decision: "allow_session"})
	if err != nil {
		t.Fatal(err)
	}
	res := sub.until("action.resolved")
	if res.ActionId != "act_perm1" || res.GetActionResolved().GetDecision() != "allow_session" || res.GetActionResolved().GetResponder() != "alice" || resp.Action.Status != "resolved" {
		t.Fatalf("action.resolved %v", res)
	}

	// A request that arrives after its turn ended is answered: cancelled.
	h.report(ctx, completed(tu.TurnId))
	request("act_late", tu.TurnId)
	if ev := sub.until("action.required"); ev.ActionId != "act_late" {
		t.Fatalf("late request opened %v", ev)
	}
	if ev := sub.until("action.resolved"); ev.ActionId != "act_late" || ev.GetActionResolved().GetOutcome() != eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED {
		t.Fatalf("late request resolved %v", ev)
	}
}
