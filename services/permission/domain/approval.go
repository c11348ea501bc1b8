package domain

import (
	"fmt"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// The decisions a permission request offers, exactly
// (docs/services/permission.md, "Approvals").
const (
	AllowOnce    = "allow_once"
	AllowSession = "allow_session"
	Deny         = "deny"
)

// Decisions is the offered set, in display order.
var Decisions = []string{AllowOnce, AllowSession, Deny}

// DecisionOnTimeout: nobody answering is a deny.
const DecisionOnTimeout = Deny

// ApprovalState is where a permission request stands.
type ApprovalState int

const (
	ApprovalPending ApprovalState = iota
	ApprovalAllowed
	ApprovalDenied
	ApprovalTimedOut
	ApprovalCancelled
)

func (s ApprovalState) String() string {
	return [...]string{"pending", "allowed", "denied", "timed_out", "cancelled"}[s]
}

// ApprovalStateOf maps a recorded resolution to its state.
func ApprovalStateOf(r eventsv1.PermissionResolution) ApprovalState {
	switch r {
	case eventsv1.PermissionResolution_PERMISSION_RESOLUTION_ALLOWED:
		return ApprovalAllowed
	case eventsv1.PermissionResolution_PERMISSION_RESOLUTION_DENIED:
		return ApprovalDenied
	case eventsv1.PermissionResolution_PERMISSION_RESOLUTION_TIMED_OUT:
		return ApprovalTimedOut
	case eventsv1.PermissionResolution_PERMISSION_RESOLUTION_CANCELLED:
		return ApprovalCancelled
	}
	return ApprovalPending
}

// Answer is how a request was answered: an action outcome and, when
// resolved, the chosen decision.
type Answer struct {
	Outcome   eventsv1.ActionOutcome
	Decision  string
	Responder string
	// By is the principal answering through ResolvePermission, checked
	// against the request's requester (no self-approval); nil for the
	// runtime's own answers (the control service's resolved action, which
	// checked its responder, timeouts, cancellations).
	By *auth.Principal
	// Action, for an answer that is a resolved action (action.resolved),
	// is what the action says of itself; the answer counts only when it is
	// the action the control service opened for this request
	// (CheckAnsweringAction). Nil for ResolvePermission.
	Action *AnsweringAction
}

// What the control service's permission reactor opens for a request: an
// action of this type, requested by this origin, on the request's turn,
// with the request's action id (ids.PermissionAction, which no caller may
// choose) and the request's evaluation id in its context.
const (
	PermissionActionType = "permission"
	PermissionOrigin     = "permission"
)

// AnsweringAction is what an action.resolved says of the action it ends.
type AnsweringAction struct {
	Type, RequestedBy, SessionID, ThreadID, TurnID string
}

// ReasonNotTheRequestsAction: an action.resolved carries the request's
// action id but is not the action opened for the request.
const ReasonNotTheRequestsAction = "NOT_THE_REQUESTS_ACTION"

// CheckAnsweringAction refuses an action that carries a request's id but
// is not the permission action the runtime opened for it: another type,
// another origin (anything a caller opened through RequestAction), or
// another session, thread or turn than the request's. Only the runtime's
// action shows the runtime's prompt, so only its answer may allow.
func CheckAnsweringAction(a AnsweringAction, sessionID, threadID, turnID string) error {
	var why string
	switch {
	case a.Type != PermissionActionType:
		why = fmt.Sprintf("its type is %q, not %q", a.Type, PermissionActionType)
	case a.RequestedBy != PermissionOrigin:
		why = fmt.Sprintf("it was requested by %q, not by the runtime's permission reactor", a.RequestedBy)
	case a.SessionID != sessionID || a.ThreadID != threadID || a.TurnID != turnID:
		why = fmt.Sprintf("it is on session %s thread %s turn %s, not the request's (session %s thread %s turn %s)", a.SessionID, a.ThreadID, a.TurnID, sessionID, threadID, turnID)
	default:
		return nil
	}
	return fault.Precondition(ReasonNotTheRequestsAction, "permission request",
		"the resolved action is not the one opened for the permission request: "+why,
		map[string]string{"action_type": a.Type, "requested_by": a.RequestedBy})
}

// ReasonAlreadyResolved: the request ended differently before; only a
// pending request can be resolved.
const ReasonAlreadyResolved = "PERMISSION_ALREADY_RESOLVED"

func alreadyResolved(s ApprovalState) error {
	return fault.Precondition(ReasonAlreadyResolved, "permission request",
		fmt.Sprintf("the permission request is already %s; only a pending request can be resolved", s), map[string]string{"state": s.String()})
}

// Resolve decides the permission.resolved of a request in state s. It
// returns nil (nothing to append) when the same answer was applied before:
// an answer is delivered at least once (the control service's
// action.resolved, a retried ResolvePermission) and applied exactly once.
func Resolve(s ApprovalState, prior *eventsv1.PermissionResolved, evaluationID string, a Answer) (*eventsv1.PermissionResolved, error) {
	next := &eventsv1.PermissionResolved{EvaluationId: evaluationID, Responder: a.Responder}
	switch a.Outcome {
	case eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED:
		next.Decision = a.Decision
		switch a.Decision {
		case AllowOnce, AllowSession:
			next.Resolution, next.Allowed = eventsv1.PermissionResolution_PERMISSION_RESOLUTION_ALLOWED, true
		case Deny:
			next.Resolution = eventsv1.PermissionResolution_PERMISSION_RESOLUTION_DENIED
		default:
			return nil, fault.Invalid("decision", "decision %q is not one of allow_once, allow_session, deny", a.Decision)
		}
	case eventsv1.ActionOutcome_ACTION_OUTCOME_TIMED_OUT:
		next.Resolution, next.Decision = eventsv1.PermissionResolution_PERMISSION_RESOLUTION_TIMED_OUT, DecisionOnTimeout
	case eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED:
		next.Resolution = eventsv1.PermissionResolution_PERMISSION_RESOLUTION_CANCELLED
	default:
		return nil, fault.Invalid("decision", "the action outcome is unspecified")
	}
	if s == ApprovalPending {
		return next, nil
	}
	if prior.GetResolution() == next.GetResolution() && prior.GetDecision() == next.GetDecision() {
		return nil, nil
	}
	return nil, alreadyResolved(s)
}
