package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/control/domain"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

// PermissionReactor is the checkpoint of the loop that reacts to the
// permission service's facts: requests become actions, requests answered
// by a host close their action, fail-open hooks become runtime warnings.
const PermissionReactor = "control.permission-reactor"

// defaultPermissionTimeout applies when a permission request names none: a
// request is never left open forever.
const defaultPermissionTimeout = 10 * time.Minute

// ReactToPermissionRequests follows the log and opens an action for every
// permission.requested fact, with the same action id (one the permission
// service minted, which no caller may use: ids.Reserved), so the human answer
// (RespondAction) flows back to the permission service as action.resolved.
// The services never call each other: the log carries the request and the
// answer. Restarts resume from the reactor's checkpoint; opening an action
// is idempotent, so a replay opens nothing twice.
func (a *App) ReactToPermissionRequests(ctx context.Context, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	err := projector.React(ctx, a.Log, a.Store, permissionReactor{app: a, logger: logger}, logger)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// permissionReactor is the projector.Reactor of the permission facts.
type permissionReactor struct {
	app    *App
	logger *slog.Logger
}

func (permissionReactor) Name() string      { return PermissionReactor }
func (permissionReactor) Filters() []string { return nil }

func (permissionReactor) Wants(ev *eventsv1.RuntimeEvent) bool {
	switch ev.GetType() {
	case events.TypePermissionRequested, events.TypePermissionResolved, events.TypeHookFailed:
		return true
	case events.TypeActionRequired, events.TypeActionResolved, events.TypeSubagentCompleted, events.TypeSubagentFailed:
		// On a subagent's thread: its parent hears it waits and ends
		// (subagentWaits).
		return true
	}
	return false
}

func (r permissionReactor) React(ctx context.Context, rec *eventlog.Record) error {
	var err error
	switch ev := rec.Event; ev.GetType() {
	case events.TypePermissionRequested:
		err = r.app.openPermissionAction(ctx, ev)
	case events.TypePermissionResolved:
		err = r.app.closeAnsweredElsewhere(ctx, ev)
	case events.TypeHookFailed:
		err = r.app.mirrorHookWarning(ctx, ev)
	case events.TypeActionRequired, events.TypeActionResolved, events.TypeSubagentCompleted, events.TypeSubagentFailed:
		err = r.app.subagentWaits(ctx, ev)
	}
	if fault.Refused(err) {
		// A fact about a turn or action this service does not know cannot
		// be acted on; say so and move on.
		r.logger.WarnContext(ctx, "cannot react to "+rec.Event.GetType(), "event_id", rec.Event.GetEventId(), "error", err)
		return nil
	}
	return err
}

func (a *App) openPermissionAction(ctx context.Context, ev *eventsv1.RuntimeEvent) error {
	p := ev.GetPermissionRequested()
	c := Caller{Tenant: ev.GetTenantId(), Subject: "permission"}
	timeout := p.GetTimeout().AsDuration()
	if timeout <= 0 {
		timeout = defaultPermissionTimeout
	}
	onTimeout := p.GetDecisionOnTimeout()
	if onTimeout == "" {
		onTimeout = "deny"
	}
	decisions := p.GetDecisions()
	if len(decisions) == 0 {
		decisions = []string{"allow_once", "allow_session", "deny"}
	}
	// The prompt is the permission service's, built from its evaluation
	// (domain.ApprovalPrompt there): permission.requested is its fact,
	// which no worker reports.
	prompt := p.GetPrompt()
	if prompt == "" {
		prompt = fmt.Sprintf("Allow %q?", p.GetName())
	}
	req := &controlv1.RequestActionRequest{
		SessionId: ev.GetSessionId(), ThreadId: ev.GetThreadId(), TurnId: ev.GetTurnId(), ActionId: ev.GetActionId(),
		ActionType: "permission", Prompt: prompt, Decisions: decisions, DecisionOnTimeout: onTimeout,
		StepId: ev.GetStepId(), ToolCallId: ev.GetToolCallId(),
		Context: map[string]string{
			"name":              p.GetName(),
			"target":            p.GetTarget().String(),
			"arguments_preview": p.GetArgumentsPreview(),
			"destructive":       fmt.Sprint(p.GetDestructive()),
			"impact_scope":      p.GetImpactScope(),
			"evaluation_id":     p.GetEvaluationId(),
		},
	}
	// What the call touches, for the person and the Lime profile's scope.
	var args struct {
		Path    string `json:"path"`
		Command string `json:"command"`
	}
	if json.Unmarshal([]byte(p.GetArgumentsPreview()), &args) == nil {
		if args.Path != "" {
			req.Context["path"] = args.Path
		}
		if args.Command != "" {
			req.Context["command"] = args.Command
		}
	}
	req.Timeout = durationOf(timeout)
	requester := auth.Principal{Tenant: c.Tenant, Subject: p.GetRequesterSubject(), Role: p.GetRequesterRole()}
	// An action that already has the id is this one only if this reactor
	// opened it for this evaluation (a replay); anything else under the
	// id is not reused: its prompt is not the runtime's. The permission
	// service accepts only this action's answer (type and origin
	// "permission", the request's turn).
	same := func(act *controlv1.Action) bool {
		return act.GetActionType() == "permission" && act.GetRequestedBy() == "permission" &&
			act.GetTurnId() == ev.GetTurnId() && act.GetContext()["evaluation_id"] == p.GetEvaluationId()
	}
	_, err := a.requestAction(ctx, c, req, "permission", requester, same)
	if fault.HasReason(err, domain.ReasonTurnEnded) {
		// The turn ended before the request arrived: open and cancel the
		// action so the permission service gets its answer.
		return a.cancelOrphanPermission(ctx, c, req, requester)
	}
	return err
}

func durationOf(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

func (a *App) cancelOrphanPermission(ctx context.Context, c Caller, req *controlv1.RequestActionRequest, requester auth.Principal) error {
	_, err := a.w.Execute(ctx, threadAgg(c.Tenant, req.GetSessionId(), req.GetThreadId()), command.Key("action:"+req.GetActionId()), func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		if _, ok, err := readmodel.Action(ctx, st, c.Tenant, req.GetActionId()); err != nil || ok {
			return nil, err
		}
		tu, err := turnIn(ctx, st, c, req.GetTurnId())
		if err != nil {
			return nil, err
		}
		return domain.DecideLateAction(tu, domain.RequestAction{
			ActionID: req.GetActionId(), Type: req.GetActionType(), Prompt: req.GetPrompt(), Decisions: req.GetDecisions(),
			DecisionOnTimeout: req.GetDecisionOnTimeout(), Context: req.GetContext(), RequestedBy: "permission",
			RequesterSubject: requester.Subject, RequesterRole: requester.Role,
			StepID: req.GetStepId(), ToolCall: req.GetToolCallId(),
		}), nil
	})
	return err
}

// closeAnsweredElsewhere closes an action whose permission request a host
// answered directly (ResolvePermission): the human is not asked any more.
// It decides on the thread's own state (the action.required this reactor
// appended for the request is in it), not on the read model, which may not
// have folded that action yet when the answer follows the request closely.
func (a *App) closeAnsweredElsewhere(ctx context.Context, ev *eventsv1.RuntimeEvent) error {
	c := Caller{Tenant: ev.GetTenantId(), Subject: "permission"}
	session, thread := ev.GetSessionId(), ev.GetThreadId()
	if thread == "" {
		act, ok, err := lookup(ctx, a, func() (*controlv1.Action, bool, error) {
			return readmodel.Action(ctx, a.Store, c.Tenant, ev.GetActionId())
		})
		if err != nil || !ok {
			return err
		}
		session, thread = act.SessionId, act.ThreadId
	}
	_, err := a.w.Execute(ctx, threadAgg(c.Tenant, session, thread), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		cur, ok, err := readmodel.Action(ctx, st, c.Tenant, ev.GetActionId())
		if err != nil || !ok {
			return nil, err // no action was opened for it: nothing to close
		}
		return domain.DecideAnsweredElsewhere(cur, ev.GetPermissionResolved().GetDecision()), nil
	})
	return err
}

// mirrorHookWarning records a fail-open hook failure as runtime.warning
// (control owns runtime.*), with an id derived from the hook fact so a
// replay does not warn twice.
func (a *App) mirrorHookWarning(ctx context.Context, ev *eventsv1.RuntimeEvent) error {
	w := domain.HookWarning(ev)
	if w == nil {
		return nil
	}
	_, err := a.Log.Append(ctx, threadAgg(ev.GetTenantId(), ev.GetSessionId(), ev.GetThreadId()), eventlog.Any, w)
	return err
}

// subagentWaits says on the parent's thread that a subagent waits for a
// person (subagent.status waiting_permission or waiting_input, from the
// child's action.required), runs again (running, from the child's
// action.resolved) and ended (completed or failed, from the child's
// subagent.completed or subagent.failed: what a parked parent resumes
// on): the parent sees it without reading the child. The status event's
// id derives from the child's fact, so a replay appends nothing twice.
func (a *App) subagentWaits(ctx context.Context, ev *eventsv1.RuntimeEvent) error {
	if ev.GetThreadId() == "" {
		return nil
	}
	th, ok, err := readmodel.Thread(ctx, a.Store, ev.GetTenantId(), ev.GetThreadId())
	if err != nil || !ok || th.GetSubagentId() == "" || th.GetSessionId() != ev.GetSessionId() {
		return err
	}
	out := domain.SubagentWaits(ev, th)
	if ev.GetType() == events.TypeSubagentCompleted || ev.GetType() == events.TypeSubagentFailed {
		out = domain.SubagentEndedOnParent(ev, th)
	}
	_, err = a.Log.Append(ctx, threadAgg(ev.GetTenantId(), ev.GetSessionId(), th.GetParentThreadId()), eventlog.Any, out)
	return err
}
