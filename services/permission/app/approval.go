package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/permission/domain"
	"github.com/agentruntime/agentruntime/services/permission/readmodel"
)

// approvalIn reads a permission request from its aggregate as the writer
// holds it.
func approvalIn(ctx context.Context, st projection.Store, tenant, actionID string) (*readmodel.ApprovalDoc, error) {
	raw, err := st.Get(ctx, readmodel.ApprovalKey(tenant, actionID))
	if errors.Is(err, projection.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	doc := &readmodel.ApprovalDoc{}
	return doc, json.Unmarshal(raw, doc)
}

// ResolveInput is an answer to a permission request: its session and
// approval action, and the answer (from ResolvePermission, or from the
// action.resolved of the action the runtime opened for it).
type ResolveInput struct {
	Session, ActionID string
	Answer            domain.Answer
}

// Resolve applies an answer to a permission request: permission.resolved
// (with sandbox.applied when the call may now run) exactly once, decided
// on the request's aggregate as the writer holds it, and for
// "allow_session" the session rule (policy.changed). A repeated answer is
// a no-op that still completes the session rule, so a crash between the
// two appends heals on redelivery.
func (a *App) Resolve(ctx context.Context, tenant string, in ResolveInput) (*eventsv1.PermissionResolved, *commonv1.WriteResult, error) {
	session, actionID, ans := in.Session, in.ActionID, in.Answer
	var resolved *eventsv1.PermissionResolved
	var doc *readmodel.ApprovalDoc
	agg := eventlog.Aggregate{Tenant: tenant, Session: session, Kind: readmodel.KindApproval, ID: actionID}
	res, err := a.requests.Execute(ctx, agg, "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		var err error
		if st.Last == 0 {
			return nil, fault.NotFound("permission request", actionID)
		}
		if doc, err = approvalIn(ctx, st, tenant, actionID); err != nil {
			return nil, err
		}
		if doc == nil || doc.SessionID != session {
			return nil, fault.NotFound("permission request", actionID)
		}
		if ans.Action != nil {
			if err := domain.CheckAnsweringAction(*ans.Action, doc.SessionID, doc.ThreadID, doc.TurnID); err != nil {
				return nil, err
			}
		}
		requested := &eventsv1.PermissionRequested{}
		if err := proto.Unmarshal(doc.Requested, requested); err != nil {
			return nil, err
		}
		if ans.By != nil && auth.SelfApproval(requested.GetRequesterSubject(), requested.GetRequesterRole(), *ans.By) {
			return nil, &fault.Error{Kind: fault.KindPermissionDenied, Reason: auth.ReasonSelfApproval,
				Message: fmt.Sprintf("permission request %s was asked by %s (%s); a worker never resolves what it asked for: an operator or admin answers it", actionID, requested.GetRequesterSubject(), requested.GetRequesterRole()),
				Metadata: map[string]string{"action_id": actionID, "requester_subject": requested.GetRequesterSubject(), "requester_role": requested.GetRequesterRole(),
					"responder_subject": ans.By.Subject, "responder_role": ans.By.Role}}
		}
		prior := &eventsv1.PermissionResolved{}
		state := domain.ApprovalPending
		if doc.Resolved != nil {
			if err := proto.Unmarshal(doc.Resolved, prior); err != nil {
				return nil, err
			}
			state = domain.ApprovalStateOf(prior.GetResolution())
		}
		next, err := domain.Resolve(state, prior, doc.EvaluationID, ans)
		if err != nil {
			return nil, err
		}
		if next == nil {
			resolved = prior
			return nil, nil
		}
		if next.GetDecision() == domain.AllowSession {
			next.SessionRuleId = domain.SessionRuleID(actionID)
		}
		resolved = next
		scope := domain.Scope{Session: doc.SessionID, Thread: doc.ThreadID, Turn: doc.TurnID,
			Step: doc.StepID, ToolCall: doc.ToolCallID, Process: doc.ProcessID, Action: actionID}
		return domain.Resolved(scope, doc.EvaluationID, requested, next), nil
	})
	if err != nil {
		return nil, nil, err
	}
	w := res.Write()
	if resolved.GetDecision() == domain.AllowSession && resolved.GetAllowed() {
		requested := &eventsv1.PermissionRequested{}
		if err := proto.Unmarshal(doc.Requested, requested); err != nil {
			return nil, nil, err
		}
		rule := proto.Clone(requested.GetProposedSessionRule()).(*eventsv1.PermissionRule)
		rule.RuleId = domain.SessionRuleID(actionID)
		rule.Description = "granted for this session by " + resolved.GetResponder()
		sw, err := a.changePolicy(ctx, tenant, "permission", "allow_session answer to "+actionID,
			Scope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_SESSION, SessionID: session},
			func(l *domain.Level) (*eventsv1.PolicyChanged, error) {
				return domain.DecideAddSessionRule(l, rule, actionID), nil
			})
		if err != nil {
			return nil, nil, err
		}
		w.EventIds = append(w.EventIds, sw.EventIds...)
		w.Sequence = max(w.Sequence, sw.Sequence)
		w.Deduplicated = w.Deduplicated && sw.Deduplicated
	}
	return resolved, w, nil
}

// reactorName keys the approval reactor's checkpoint.
const reactorName = "permission.approval-reactor"

// RunApprovalReactor consumes action.resolved from the control service
// and resolves the permission requests this service opened: the approval
// path between the two services goes through the log, never a call. It
// follows the whole log (the control service's aggregate layout is its
// own), resumes from its checkpoint, and applies each answer idempotently,
// so a redelivered answer changes nothing.
func (a *App) RunApprovalReactor(ctx context.Context) error {
	return projector.React(ctx, a.log, a.store, approvalReactor{a}, a.logger)
}

// approvalReactor is the projector.Reactor of answered actions.
type approvalReactor struct{ a *App }

func (approvalReactor) Name() string        { return reactorName }
func (r approvalReactor) Filters() []string { return []string{r.a.log.Subjects.All()} }

func (approvalReactor) Wants(ev *eventsv1.RuntimeEvent) bool {
	return ev.GetType() == events.TypeActionResolved
}

func (r approvalReactor) React(ctx context.Context, rec *eventlog.Record) error {
	return r.a.applyAnswer(ctx, rec.Event)
}

func (a *App) applyAnswer(ctx context.Context, ev *eventsv1.RuntimeEvent) error {
	ar := ev.GetActionResolved()
	_, _, err := a.Resolve(ctx, ev.GetTenantId(), ResolveInput{Session: ev.GetSessionId(), ActionID: ev.GetActionId(), Answer: domain.Answer{
		Outcome: ar.GetOutcome(), Decision: ar.GetDecision(), Responder: ar.GetResponder(),
		Action: &domain.AnsweringAction{Type: ar.GetActionType(), RequestedBy: ar.GetRequestedBy(),
			SessionID: ev.GetSessionId(), ThreadID: ev.GetThreadId(), TurnID: ev.GetTurnId()},
	}})
	switch {
	case fault.Is(err, fault.KindNotFound):
		// Another kind of action (input, confirmation...): not ours.
		return nil
	case fault.HasReason(err, domain.ReasonNotTheRequestsAction):
		// An action someone else opened under the request's id (a prompt
		// the runtime did not write): its answer decides nothing.
		a.logger.WarnContext(ctx, "action.resolved not applied: not the action opened for the permission request", "action_id", ev.GetActionId(), "reason", err)
		return nil
	case fault.HasReason(err, domain.ReasonAlreadyResolved), fault.Is(err, fault.KindInvalid):
		// The request was answered another way first (ResolvePermission),
		// or the answer is not one the request offered: the log keeps the
		// first answer; record why this one changed nothing.
		a.logger.WarnContext(ctx, "action.resolved not applied to its permission request", "action_id", ev.GetActionId(), "reason", err)
		return nil
	}
	return err
}
