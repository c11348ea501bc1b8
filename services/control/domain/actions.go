package domain

import (
	"fmt"
	"google.golang.org/protobuf/proto"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// RequestAction opens a decision on a turn.
type RequestAction struct {
	ActionID          string
	Type              string
	Prompt            string
	JSONSchema        string
	Decisions         []string
	Timeout           time.Duration
	DecisionOnTimeout string
	Context           map[string]string
	RequestedBy       string
	// Requester is the principal whose call opened the action; it is
	// recorded so that it never resolves it when it is a worker.
	RequesterSubject, RequesterRole string
	StepID, ToolCall                string
	Now                             time.Time
}

// DecideRequestAction writes action.required for a turn that is still
// going. An existing action with the same id on the same turn is returned
// as it is by the caller (idempotent retry), so it never reaches here.
func DecideRequestAction(turn *controlv1.Turn, cmd RequestAction) ([]*eventsv1.RuntimeEvent, error) {
	if Terminal(turn.Status) {
		return nil, precondition(ReasonTurnEnded, "turn/"+turn.TurnId, "turn %s already ended as %s; actions need a live turn", turn.TurnId, enums.Word(turn.Status))
	}
	if cmd.DecisionOnTimeout != "" && cmd.DecisionOnTimeout != FallbackCancelTurn && !slices.Contains(cmd.Decisions, cmd.DecisionOnTimeout) {
		return nil, invalid("decision_on_timeout", "%q is not one of the decisions %s, nor %q", cmd.DecisionOnTimeout, strings.Join(cmd.Decisions, ", "), FallbackCancelTurn)
	}
	if cmd.Timeout > 0 && cmd.DecisionOnTimeout == "" {
		return nil, invalid("decision_on_timeout", "required with a timeout: the decision applied when nobody answers")
	}
	p := &eventsv1.ActionRequired{
		ActionType: cmd.Type, Prompt: cmd.Prompt, JsonSchema: cmd.JSONSchema, Decisions: cmd.Decisions,
		DecisionOnTimeout: cmd.DecisionOnTimeout, RequestedBy: cmd.RequestedBy, Context: cmd.Context,
		RequesterSubject: cmd.RequesterSubject, RequesterRole: cmd.RequesterRole,
	}
	if cmd.Timeout > 0 {
		p.Timeout = durationpb.New(cmd.Timeout)
		p.ExpiresAt = timestamppb.New(cmd.Now.Add(cmd.Timeout))
	}
	ev := event(events.TypeActionRequired, Scope{Session: turn.SessionId, Thread: turn.ThreadId, Turn: turn.TurnId, Action: cmd.ActionID, Step: cmd.StepID, ToolCall: cmd.ToolCall})
	ev.Payload = &eventsv1.RuntimeEvent_ActionRequired{ActionRequired: p}
	return []*eventsv1.RuntimeEvent{ev}, nil
}

// Respond is a RespondAction; SchemaError is the result of validating the
// payload against the action's schema (done by the caller, which owns the
// schema compiler).
type Respond struct {
	Decision    string
	PayloadJSON string
	// Responder is who answers; its role is checked against the action's
	// requester (no self-approval).
	Responder   auth.Principal
	SchemaError error
}

// DecideRespond resolves a pending action with one of its decisions. An
// action that is no longer pending returns nil events: the caller answers
// with the first resolution (exactly once).
//
// Decisions come from people or policy, never from the worker that asked:
// a worker principal, or the subject that opened the action as a worker,
// is PermissionDenied SELF_APPROVAL whatever the action's state.
func DecideRespond(a *controlv1.Action, cmd Respond) ([]*eventsv1.RuntimeEvent, error) {
	if auth.SelfApproval(a.RequesterSubject, a.RequesterRole, cmd.Responder) {
		return nil, &fault.Error{Kind: fault.KindPermissionDenied, Reason: auth.ReasonSelfApproval,
			Message: fmt.Sprintf("action %s was requested by %s (%s); a worker never resolves what it asked for: an operator or admin answers it", a.ActionId, a.RequesterSubject, a.RequesterRole),
			Metadata: map[string]string{"action_id": a.ActionId, "requester_subject": a.RequesterSubject, "requester_role": a.RequesterRole,
				"responder_subject": cmd.Responder.Subject, "responder_role": cmd.Responder.Role}}
	}
	if a.Status != ActionPending {
		return nil, nil
	}
	if !slices.Contains(a.Decisions, cmd.Decision) {
		return nil, invalid("decision", "%q is not offered; the action offers %s", cmd.Decision, strings.Join(a.Decisions, ", "))
	}
	if a.JsonSchema != "" && cmd.SchemaError != nil {
		return nil, invalid("payload_json", "does not match the action's schema: %v", cmd.SchemaError)
	}
	return []*eventsv1.RuntimeEvent{resolveAction(a, eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED, cmd.Decision, cmd.PayloadJSON, cmd.Responder.Subject)}, nil
}

// FallbackCancelTurn, as an action's decision_on_timeout, cancels its
// turn when nobody answers in time (besides any of the decisions).
const FallbackCancelTurn = "cancel_turn"

// DecideTimeout resolves a pending action whose deadline passed with its
// timeout decision.
func DecideTimeout(a *controlv1.Action, now time.Time) []*eventsv1.RuntimeEvent {
	if a.Status != ActionPending || a.ExpiresAt == nil || now.Before(a.ExpiresAt.AsTime()) {
		return nil
	}
	return []*eventsv1.RuntimeEvent{resolveAction(a, eventsv1.ActionOutcome_ACTION_OUTCOME_TIMED_OUT, a.DecisionOnTimeout, "", "runtime")}
}

// DecideTimeoutOn is DecideTimeout with the action's thread, turn and the
// turn's attempts (nil: never claimed): a cancel_turn fallback also
// interrupts the turn (DecideInterrupt: a turn no worker holds, not
// started, parked or lost, ends at once). The runtime keeps the deadline
// whether or not a worker is up.
func DecideTimeoutOn(th *controlv1.ThreadRead, turn *controlv1.Turn, at *controlv1.TurnAttempts, a *controlv1.Action, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	out := DecideTimeout(a, now)
	if len(out) == 0 || a.DecisionOnTimeout != FallbackCancelTurn || turn == nil {
		return out, nil
	}
	rest := proto.Clone(th).(*controlv1.ThreadRead)
	rest.PendingActions = slices.DeleteFunc(rest.PendingActions, func(x *controlv1.Action) bool { return x.ActionId == a.ActionId })
	stop, err := DecideInterrupt(rest, turn, Interrupt{TurnID: turn.TurnId, Attempts: at,
		Reason: fmt.Sprintf("action %s was not answered in time; its fallback cancels the turn", a.ActionId)})
	return append(out, stop...), err
}

func resolveAction(a *controlv1.Action, outcome eventsv1.ActionOutcome, decision, payload, responder string) *eventsv1.RuntimeEvent {
	ev := event(events.TypeActionResolved, Scope{Session: a.SessionId, Thread: a.ThreadId, Turn: a.TurnId, Action: a.ActionId, Step: a.StepId, ToolCall: a.ToolCallId})
	ev.Payload = &eventsv1.RuntimeEvent_ActionResolved{ActionResolved: &eventsv1.ActionResolved{
		Outcome: outcome, Decision: decision, PayloadJson: payload, Responder: responder,
		ActionType: a.ActionType, RequestedBy: a.RequestedBy,
	}}
	return ev
}

// DecideLateAction records an action asked for a turn that already ended:
// opened and cancelled at once, so whoever asked gets an answer instead of
// waiting forever.
func DecideLateAction(turn *controlv1.Turn, cmd RequestAction) []*eventsv1.RuntimeEvent {
	p := &eventsv1.ActionRequired{
		ActionType: cmd.Type, Prompt: cmd.Prompt, Decisions: cmd.Decisions, DecisionOnTimeout: cmd.DecisionOnTimeout,
		RequestedBy: cmd.RequestedBy, Context: cmd.Context, RequesterSubject: cmd.RequesterSubject, RequesterRole: cmd.RequesterRole,
	}
	scope := Scope{Session: turn.SessionId, Thread: turn.ThreadId, Turn: turn.TurnId, Action: cmd.ActionID, Step: cmd.StepID, ToolCall: cmd.ToolCall}
	req := event(events.TypeActionRequired, scope)
	req.Payload = &eventsv1.RuntimeEvent_ActionRequired{ActionRequired: p}
	a := &controlv1.Action{ActionId: cmd.ActionID, SessionId: turn.SessionId, ThreadId: turn.ThreadId, TurnId: turn.TurnId,
		ActionType: cmd.Type, RequestedBy: cmd.RequestedBy, StepId: cmd.StepID, ToolCallId: cmd.ToolCall}
	return []*eventsv1.RuntimeEvent{req, resolveAction(a, eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED, "", "", "runtime")}
}

// DecideAnsweredElsewhere closes a pending action whose question was
// answered outside it (a host resolved the permission directly): cancelled,
// with the answer recorded as its decision when it was one of the offered.
func DecideAnsweredElsewhere(a *controlv1.Action, decision string) []*eventsv1.RuntimeEvent {
	if a.Status != ActionPending {
		return nil
	}
	if !slices.Contains(a.Decisions, decision) {
		decision = ""
	}
	return []*eventsv1.RuntimeEvent{resolveAction(a, eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED, decision, "", "host")}
}
