package domain

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/events"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// The events of permission's decisions: the app evaluates, runs hooks and
// appends; what is recorded is built here.

// Scope is what a permission fact is about: the call's session, thread,
// turn, step and tool call (or process), and the approval action when
// there is one.
type Scope struct {
	Session, Thread, Turn, Step, ToolCall, Process, Action string
}

// Event is an event of typ on the scope, without a payload.
func (s Scope) Event(typ string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: typ, SessionId: s.Session, ThreadId: s.Thread, TurnId: s.Turn,
		StepId: s.Step, ToolCallId: s.ToolCall, ProcessId: s.Process, ActionId: s.Action}
}

// Judged is what an evaluation was of, beside its Evaluation: the call,
// the mode it was judged in, the hooks that took part and the approval it
// asks for (ApprovalActionID, minted by the runtime, for an ask).
type Judged struct {
	EvaluationID     string
	Target           eventsv1.TargetKind
	Name             string
	Access           eventsv1.Access
	Mode             eventsv1.PermissionMode
	Interactive      bool
	HookRunIDs       []string
	ArgumentsPreview string
	// UpdatedInputRef is a hook's rewritten input, which the call runs
	// with.
	UpdatedInputRef  *commonv1.OutputRef
	ApprovalActionID string
}

// RunsNow: the decision lets the call run without a person.
func (e Evaluation) RunsNow() bool {
	return e.Decision == eventsv1.Decision_DECISION_ALLOW || e.Decision == eventsv1.Decision_DECISION_SANDBOXED
}

// Evaluated is permission.evaluated of a decision, then sandbox.violation
// for each target outside the sandbox, then sandbox.applied when the call
// may run now: the facts that land together on the evaluation.
func Evaluated(s Scope, j Judged, ev Evaluation) (*eventsv1.PermissionEvaluated, []*eventsv1.RuntimeEvent) {
	pe := &eventsv1.PermissionEvaluated{
		EvaluationId: j.EvaluationID, Target: j.Target, Name: j.Name, Access: j.Access, Decision: ev.Decision,
		DecisionSource: ev.Source, DecisionReason: ev.Reason, RuleRefs: ev.RuleRefs, Destructive: ev.Destructive,
		ImpactScope: ev.ImpactScope, RollbackAdvice: ev.RollbackAdvice, Scope: ev.Scope, ExpiresAt: ev.ExpiresAtProto(),
		Mode: j.Mode, Interactive: j.Interactive, Subcommands: ev.Subcommands, Paths: ev.Paths, Hosts: ev.Hosts,
		HookRunIds: j.HookRunIDs, ArgumentsPreview: j.ArgumentsPreview,
		// The hook fact holds the ref too; the decision points at the same
		// object so the tool path cannot miss the rewrite.
		UpdatedInputRef:  j.UpdatedInputRef,
		ApprovalActionId: j.ApprovalActionID,
	}
	evaluated := s.Event(events.TypePermissionEvaluated)
	evaluated.Payload = &eventsv1.RuntimeEvent_PermissionEvaluated{PermissionEvaluated: pe}
	evs := []*eventsv1.RuntimeEvent{evaluated}
	for _, v := range ev.Violations {
		e := s.Event(events.TypeSandboxViolation)
		e.Payload = &eventsv1.RuntimeEvent_SandboxViolation{SandboxViolation: &eventsv1.SandboxViolation{
			Kind: v.Kind, Target: v.Target, Reason: v.Reason, EvaluationId: j.EvaluationID, DetectedBy: "permission", Blocked: !ev.RunsNow(),
		}}
		evs = append(evs, e)
	}
	if ev.RunsNow() {
		evs = append(evs, SandboxApplied(s, j.Target, j.Name, j.EvaluationID, ev.Profile))
	}
	return pe, evs
}

// Ask is an approval a decision asks a person for.
type Ask struct {
	Prompt           string
	Timeout          time.Duration
	RequesterSubject string
	RequesterRole    string
}

// Requested is permission.requested of an evaluation that asks, on the
// approval action the runtime minted (j.ApprovalActionID): the prompt the
// runtime built from what it judged, the decisions offered and what
// happens on timeout.
func Requested(s Scope, j Judged, ev Evaluation, a Ask) *eventsv1.RuntimeEvent {
	s.Action = j.ApprovalActionID
	e := s.Event(events.TypePermissionRequested)
	e.Payload = &eventsv1.RuntimeEvent_PermissionRequested{PermissionRequested: &eventsv1.PermissionRequested{
		EvaluationId: j.EvaluationID, Prompt: a.Prompt, Target: j.Target, Name: j.Name, ArgumentsPreview: j.ArgumentsPreview,
		Decisions: append([]string(nil), Decisions...), Timeout: durationpb.New(a.Timeout), DecisionOnTimeout: DecisionOnTimeout,
		Destructive: ev.Destructive, ImpactScope: ev.ImpactScope, ProposedSessionRule: ev.ProposedSessionRule, SandboxProfile: ev.Profile,
		RequesterSubject: a.RequesterSubject, RequesterRole: a.RequesterRole,
	}}
	return e
}

// Resolved is permission.resolved of an approval, and sandbox.applied when
// it lets the call run (requested: the request it answers).
func Resolved(s Scope, evaluationID string, requested *eventsv1.PermissionRequested, r *eventsv1.PermissionResolved) []*eventsv1.RuntimeEvent {
	e := s.Event(events.TypePermissionResolved)
	e.Payload = &eventsv1.RuntimeEvent_PermissionResolved{PermissionResolved: r}
	evs := []*eventsv1.RuntimeEvent{e}
	if r.GetAllowed() {
		evs = append(evs, SandboxApplied(s, requested.GetTarget(), requested.GetName(), evaluationID, requested.GetSandboxProfile()))
	}
	return evs
}

// SandboxApplied is sandbox.applied by the permission service: the profile
// a call allowed to run runs in.
func SandboxApplied(s Scope, target eventsv1.TargetKind, name, evaluationID string, profile *eventsv1.SandboxProfile) *eventsv1.RuntimeEvent {
	t := eventsv1.SandboxTarget_SANDBOX_TARGET_TOOL
	if target == eventsv1.TargetKind_TARGET_KIND_PROCESS {
		t = eventsv1.SandboxTarget_SANDBOX_TARGET_PROCESS
	}
	e := s.Event(events.TypeSandboxApplied)
	e.Payload = &eventsv1.RuntimeEvent_SandboxApplied{SandboxApplied: &eventsv1.SandboxApplied{Target: t, Name: name, EvaluationId: evaluationID, Profile: profile, AppliedBy: "permission"}}
	return e
}

// PolicyChanged is policy.changed of a level: on the session (and thread)
// it belongs to, none for the tenant's and workspaces' levels.
func PolicyChanged(session, thread string, pc *eventsv1.PolicyChanged) *eventsv1.RuntimeEvent {
	e := Scope{Session: session, Thread: thread}.Event(events.TypePolicyChanged)
	e.Payload = &eventsv1.RuntimeEvent_PolicyChanged{PolicyChanged: pc}
	return e
}

// ReportedViolation is sandbox.violation as an executing host reports it.
func ReportedViolation(s Scope, v *eventsv1.SandboxViolation) *eventsv1.RuntimeEvent {
	e := s.Event(events.TypeSandboxViolation)
	e.Payload = &eventsv1.RuntimeEvent_SandboxViolation{SandboxViolation: v}
	return e
}

// ReportedApplied is sandbox.applied as an executing host reports what it
// enforced, or a turn's execution environment (target turn).
func ReportedApplied(s Scope, sa *eventsv1.SandboxApplied) *eventsv1.RuntimeEvent {
	e := s.Event(events.TypeSandboxApplied)
	e.Payload = &eventsv1.RuntimeEvent_SandboxApplied{SandboxApplied: sa}
	return e
}

// HookStarted, HookFailed and HookCompleted are the facts of one hook run.
func HookStarted(s Scope, h *eventsv1.HookStarted) *eventsv1.RuntimeEvent {
	e := s.Event(events.TypeHookStarted)
	e.Payload = &eventsv1.RuntimeEvent_HookStarted{HookStarted: h}
	return e
}

// HookFailed: see HookStarted.
func HookFailed(s Scope, h *eventsv1.HookFailed) *eventsv1.RuntimeEvent {
	e := s.Event(events.TypeHookFailed)
	e.Payload = &eventsv1.RuntimeEvent_HookFailed{HookFailed: h}
	return e
}

// HookCompleted: see HookStarted.
func HookCompleted(s Scope, h *eventsv1.HookCompleted) *eventsv1.RuntimeEvent {
	e := s.Event(events.TypeHookCompleted)
	e.Payload = &eventsv1.RuntimeEvent_HookCompleted{HookCompleted: h}
	return e
}
