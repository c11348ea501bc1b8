package control_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
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
	if th.Status != controlv1.ThreadStatus_THREAD_STATUS_WAITING_PERMISSION || th.Permission.GetState() != commonv1.FactState_FACT_STATE_KNOWN {
		t.Fatalf("thread %v", th)
	}
	resp, err := h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: "act_perm1", Decision: "allow_session"})
	if err != nil {
		t.Fatal(err)
	}
	res := sub.until("action.resolved")
	if res.ActionId != "act_perm1" || res.GetActionResolved().GetDecision() != "allow_session" || res.GetActionResolved().GetResponder() != "alice" || resp.Action.Status != controlv1.ActionStatus_ACTION_STATUS_RESOLVED {
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

func TestHostAnsweredPermissionClosesTheActionAndFailOpenHooksWarn(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	h.report(ctx, started(tu.TurnId))
	sub := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"action.", "runtime.warning"}, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	agg := eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "permission", ID: "act_host"}
	scope := func(typ string) *eventsv1.RuntimeEvent {
		return &eventsv1.RuntimeEvent{Type: typ, SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId, ActionId: "act_host"}
	}
	req := scope("permission.requested")
	req.Payload = &eventsv1.RuntimeEvent_PermissionRequested{PermissionRequested: &eventsv1.PermissionRequested{Name: "shell", Decisions: []string{"allow_once", "allow_session", "deny"}, DecisionOnTimeout: "deny"}}
	if _, err := h.log.Append(context.Background(), agg, eventlog.Any, req); err != nil {
		t.Fatal(err)
	}
	sub.until("action.required")
	res := scope("permission.resolved")
	res.Payload = &eventsv1.RuntimeEvent_PermissionResolved{PermissionResolved: &eventsv1.PermissionResolved{Resolution: eventsv1.PermissionResolution_PERMISSION_RESOLUTION_ALLOWED, Decision: "allow_once", Responder: "host"}}
	if _, err := h.log.Append(context.Background(), agg, eventlog.Any, res); err != nil {
		t.Fatal(err)
	}
	closed := sub.until("action.resolved").GetActionResolved()
	if closed.GetOutcome() != eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED || closed.GetDecision() != "allow_once" || closed.GetResponder() != "host" {
		t.Fatalf("host-answered action closed as %v", closed)
	}
	hook := &eventsv1.RuntimeEvent{Type: "hook.failed", SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId,
		Payload: &eventsv1.RuntimeEvent_HookFailed{HookFailed: &eventsv1.HookFailed{HookId: "audit", FailMode: eventsv1.FailMode_FAIL_MODE_OPEN, Warning: "audit hook timed out"}}}
	if _, err := h.log.Append(context.Background(), eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "hook", ID: "run_1"}, eventlog.Any, hook); err != nil {
		t.Fatal(err)
	}
	w := sub.until("runtime.warning")
	if w.GetRuntimeWarning().GetCode() != "hook_failed_open" || w.GetRuntimeWarning().GetMessage() != "audit hook timed out" || w.ThreadId != "th1" {
		t.Fatalf("warning %v", w)
	}
}

// The ids of permission actions are the runtime's: RequestAction refuses
// one (InvalidArgument on action_id) and appends nothing. An action a
// caller opened under an id a permission request later carries (ids
// minted before the namespace was reserved) stays the caller's: the
// reactor opens nothing over it (and the permission service does not take
// its answer for the request's: services/permission
// TestScenarioApprovalGateToolPath), while the next request gets the
// runtime's action with the runtime's prompt.
func TestPermissionActionIdsAreReserved(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	h.report(ctx, started(tu.TurnId))
	before := h.heads(ctx)
	reserved := ids.New(ids.PermissionAction)
	_, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId, ActionId: reserved,
		ActionType: "permission", Prompt: "Allow read_file README.md?", Decisions: []string{"allow_once", "deny"}})
	assertCode(t, err, codes.InvalidArgument, "action_id")
	if after := h.heads(ctx); !slices.Equal(before, after) {
		t.Fatalf("a refused RequestAction appended: heads %v -> %v", before, after)
	}

	sub := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"action."}, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	if _, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId, ActionId: "act_legacy",
		ActionType: "permission", Prompt: "Allow read_file README.md?", Decisions: []string{"allow_once", "deny"}}); err != nil {
		t.Fatal(err)
	}
	request := func(actionID, evaluationID string) {
		t.Helper()
		ev := &eventsv1.RuntimeEvent{Type: "permission.requested", SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId, ActionId: actionID,
			Payload: &eventsv1.RuntimeEvent_PermissionRequested{PermissionRequested: &eventsv1.PermissionRequested{
				EvaluationId: evaluationID, Prompt: `Allow tool "shell" to execute: command "rm -rf build/"?`, Name: "shell",
				Decisions: []string{"allow_once", "allow_session", "deny"}, DecisionOnTimeout: "deny", Destructive: true,
			}}}
		if _, err := h.log.Append(context.Background(), eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "permission", ID: actionID}, eventlog.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	request("act_legacy", "pev_1")
	request(reserved, "pev_2") // after it, in the reactor's order
	var required []*eventsv1.RuntimeEvent
	for {
		ev := sub.until("action.required")
		required = append(required, ev)
		if ev.ActionId == reserved {
			break
		}
	}
	if len(required) != 2 || required[0].ActionId != "act_legacy" || required[0].GetActionRequired().GetRequestedBy() != "alice" {
		t.Fatalf("action.required facts %v, want the caller's act_legacy then the runtime's %s only", required, reserved)
	}
	if r := required[1].GetActionRequired(); r.GetRequestedBy() != "permission" || r.GetContext()["evaluation_id"] != "pev_2" || !strings.Contains(r.GetPrompt(), "rm -rf build/") {
		t.Fatalf("the runtime's action %v", r)
	}
}
