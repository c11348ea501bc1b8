// Actions (approvals, input) in the control read model.

package readmodel

import (
	"slices"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

func (t *tx) actionRequired() {
	ev := t.ev
	if taken(t, ActionKey(t.tenant(), ev.GetActionId()), newAction) {
		return
	}
	p := ev.GetActionRequired()
	a := &controlv1.Action{
		ActionId: ev.GetActionId(), SessionId: ev.GetSessionId(), ThreadId: ev.GetThreadId(), TurnId: ev.GetTurnId(),
		ActionType: p.GetActionType(), Prompt: p.GetPrompt(), JsonSchema: p.GetJsonSchema(), Decisions: p.GetDecisions(),
		DecisionOnTimeout: p.GetDecisionOnTimeout(), ExpiresAt: p.GetExpiresAt(), Context: p.GetContext(),
		RequestedBy: p.GetRequestedBy(), Status: domain.ActionPending, RequestedAt: ev.GetTimestamp(),
		RequesterSubject: p.GetRequesterSubject(), RequesterRole: p.GetRequesterRole(),
		StepId: ev.GetStepId(), ToolCallId: ev.GetToolCallId(), Sequence: t.seq(),
	}
	t.put(ActionKey(t.tenant(), a.ActionId), a)
	if a.ExpiresAt != nil {
		t.adds = append(t.adds, projection.IndexEntry{Index: DueActionsIndex, Member: t.tenant() + "|" + a.ActionId, Score: float64(a.ExpiresAt.AsTime().UnixMilli())})
	}
	t.removes = append(t.removes, projection.IndexEntry{Index: PermissionRequestsIndex, Member: t.tenant() + "|" + a.ActionId})
	t.adds = append(t.adds, projection.IndexEntry{Index: PendingActionsIndex, Member: t.tenant() + "|" + a.ActionId, Score: float64(ev.GetTimestamp().AsTime().UnixMilli())})
	if th, ok := t.thread(a.ThreadId); ok {
		th.PendingActions = append(th.PendingActions, a)
		t.refreshThreadStatus(th)
		t.touchThread(th)
	}
	if tu, ok := t.turn(a.TurnId); ok && !terminal(tu.Status) {
		tu.Status = waitingTurnStatus(a.ActionType)
		t.touchTurn(tu)
	}
}

func (t *tx) actionResolved() {
	ev := t.ev
	a, ok, _ := own(t, ActionKey(t.tenant(), ev.GetActionId()), newAction)
	if !ok {
		return
	}
	p := ev.GetActionResolved()
	switch p.GetOutcome() {
	case eventsv1.ActionOutcome_ACTION_OUTCOME_TIMED_OUT:
		a.Status = controlv1.ActionStatus_ACTION_STATUS_TIMED_OUT
	case eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED:
		a.Status = controlv1.ActionStatus_ACTION_STATUS_CANCELLED
	default:
		a.Status = controlv1.ActionStatus_ACTION_STATUS_RESOLVED
	}
	a.Decision, a.PayloadJson, a.Responder, a.ResolvedAt, a.Sequence = p.GetDecision(), p.GetPayloadJson(), p.GetResponder(), ev.GetTimestamp(), t.seq()
	t.put(ActionKey(t.tenant(), a.ActionId), a)
	t.removes = append(t.removes,
		projection.IndexEntry{Index: DueActionsIndex, Member: t.tenant() + "|" + a.ActionId},
		projection.IndexEntry{Index: PendingActionsIndex, Member: t.tenant() + "|" + a.ActionId})
	th, ok := t.thread(a.ThreadId)
	if !ok {
		return
	}
	th.PendingActions = slices.DeleteFunc(th.PendingActions, func(x *controlv1.Action) bool { return x.ActionId == a.ActionId })
	// An interrupt requested stays requested: its cancellations of the
	// turn's actions must not make the turn look running again.
	if tu, ok := t.turn(a.TurnId); ok && !terminal(tu.Status) && tu.Status != domain.TurnInterrupting {
		tu.Status = domain.TurnRunning
		if tu.StartedAt == nil {
			tu.Status = domain.TurnAccepted
		}
		for _, other := range th.PendingActions {
			if other.TurnId == tu.TurnId {
				tu.Status = waitingTurnStatus(other.ActionType)
			}
		}
		t.touchTurn(tu)
	}
	t.refreshThreadStatus(th)
	t.touchThread(th)
}

func newAction() *controlv1.Action { return &controlv1.Action{} }
