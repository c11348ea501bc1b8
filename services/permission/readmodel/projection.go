package readmodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
)

// Name keys the read model's checkpoint.
const Name = "permission.state"

// FoldVersion is the permission projection's fold version (projection.Fold):
// bump it with any change to what it stores or how it folds an event; a
// process of a new fold version rebuilds the read models beside the old
// ones (docs/upgrading.md).
const FoldVersion = 1

// recentLimit bounds the recent decisions, violations and hook runs a
// summary keeps.
const recentLimit = 20

// Projection is the service's read model: policy levels, hooks, pending
// and resolved permission requests, per-session and per-thread summaries,
// and per-turn execution environments. It reads only the service's own
// aggregates.
type Projection struct {
	filters []string
}

// New follows the service's aggregate kinds in every tenant.
func New(subjects eventlog.Subjects) *Projection {
	p := &Projection{}
	for _, k := range allKinds {
		p.filters = append(p.filters, subjects.Kind("*", k))
	}
	return p
}

// Name implements projector.Projection.
func (p *Projection) Name() string { return Name }

// FoldVersion is the projection's fold version (projection.Fold).
func (p *Projection) FoldVersion() int { return FoldVersion }

// Filters implements projector.Projection.
func (p *Projection) Filters() []string { return p.filters }

// ApprovalDoc is a permission request as the read model keeps it.
type ApprovalDoc struct {
	ActionID     string    `json:"action_id"`
	EvaluationID string    `json:"evaluation_id"`
	SessionID    string    `json:"session_id"`
	ThreadID     string    `json:"thread_id"`
	TurnID       string    `json:"turn_id"`
	StepID       string    `json:"step_id,omitempty"`
	ToolCallID   string    `json:"tool_call_id,omitempty"`
	ProcessID    string    `json:"process_id,omitempty"`
	RequestedAt  time.Time `json:"requested_at"`
	Requested    []byte    `json:"requested"`          // eventsv1.PermissionRequested
	Resolved     []byte    `json:"resolved,omitempty"` // eventsv1.PermissionResolved
}

// batch collects one event's writes, reading through its own pending
// writes so one event can update a document twice.
type batch struct {
	store projection.Store
	puts  map[string][]byte
	order []string
}

func (b *batch) get(ctx context.Context, key string) ([]byte, error) {
	if v, ok := b.puts[key]; ok {
		return v, nil
	}
	v, err := b.store.Get(ctx, key)
	if errors.Is(err, projection.ErrNotFound) {
		return nil, nil
	}
	return v, err
}

func (b *batch) put(key string, v []byte) {
	if _, ok := b.puts[key]; !ok {
		b.order = append(b.order, key)
	}
	b.puts[key] = v
}

func (b *batch) getProto(ctx context.Context, key string, m proto.Message) (bool, error) {
	v, err := b.get(ctx, key)
	if err != nil || v == nil {
		return false, err
	}
	return true, proto.Unmarshal(v, m)
}

func (b *batch) putProto(key string, m proto.Message) error {
	v, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	b.put(key, v)
	return nil
}

func (b *batch) result() projection.Batch {
	out := projection.Batch{}
	for _, k := range b.order {
		out.Puts = append(out.Puts, projection.KV{Key: k, Value: b.puts[k]})
	}
	return out
}

// Project implements projector.Projection.
func (p *Projection) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	ev := rec.Event
	b := &batch{store: store, puts: map[string][]byte{}}
	var err error
	switch pl := ev.GetPayload().(type) {
	case *eventsv1.RuntimeEvent_PolicyChanged:
		err = projectPolicy(ctx, b, ev, pl.PolicyChanged)
	case *eventsv1.RuntimeEvent_PermissionEvaluated:
		err = projectEvaluated(ctx, b, ev, pl.PermissionEvaluated)
	case *eventsv1.RuntimeEvent_PermissionRequested:
		err = projectRequested(ctx, b, ev, pl.PermissionRequested)
	case *eventsv1.RuntimeEvent_PermissionResolved:
		err = projectResolved(ctx, b, ev, pl.PermissionResolved)
	case *eventsv1.RuntimeEvent_SandboxApplied:
		err = projectSandboxApplied(ctx, b, ev, pl.SandboxApplied)
	case *eventsv1.RuntimeEvent_SandboxViolation:
		err = forSummaries(ctx, b, ev, func(s *permissionv1.GetPermissionSandboxSummaryResponse) {
			v := pl.SandboxViolation
			s.Violations = prepend(s.Violations, &permissionv1.ViolationSummary{
				EventId: ev.GetEventId(), ThreadId: ev.GetThreadId(), TurnId: ev.GetTurnId(), Kind: v.GetKind(),
				Target: v.GetTarget(), Reason: v.GetReason(), Blocked: v.GetBlocked(), Sequence: ev.GetSequence(),
			})
			if s.SandboxProfile != nil {
				s.SandboxProfile.ViolationRefs = append(s.SandboxProfile.ViolationRefs, ev.GetEventId())
			}
			if v.GetBlocked() && v.GetDetectedBy() != "permission" {
				// A worker's sandbox stopped an access at execution time:
				// that is the latest denial, and the sandbox caused it.
				s.LastDenial = &permissionv1.Explanation{State: commonv1.FactState_FACT_STATE_KNOWN,
					Cause: eventsv1.DecisionSource_DECISION_SOURCE_SANDBOX, Reason: v.GetTarget() + ": " + v.GetReason(), EvaluationId: v.GetEvaluationId()}
			}
		})
	case *eventsv1.RuntimeEvent_HookStarted:
		h := pl.HookStarted
		err = upsertHookRun(ctx, b, ev, &permissionv1.HookRunSummary{HookRunId: h.GetHookRunId(), HookId: h.GetHookId(), Point: h.GetPoint(), Status: permissionv1.HookRunStatus_HOOK_RUN_STATUS_RUNNING})
	case *eventsv1.RuntimeEvent_HookCompleted:
		h := pl.HookCompleted
		err = upsertHookRun(ctx, b, ev, &permissionv1.HookRunSummary{HookRunId: h.GetHookRunId(), HookId: h.GetHookId(), Point: h.GetPoint(), Status: permissionv1.HookRunStatus_HOOK_RUN_STATUS_COMPLETED,
			Decision: h.GetDecision(), InputRewritten: h.GetUpdatedInputRef() != nil, Reason: h.GetReason()})
	case *eventsv1.RuntimeEvent_HookFailed:
		h := pl.HookFailed
		err = upsertHookRun(ctx, b, ev, &permissionv1.HookRunSummary{HookRunId: h.GetHookRunId(), HookId: h.GetHookId(), Point: h.GetPoint(), Status: permissionv1.HookRunStatus_HOOK_RUN_STATUS_FAILED,
			FailMode: h.GetFailMode(), Reason: h.GetError()})
	}
	if err != nil {
		return projection.Batch{}, err
	}
	return b.result(), nil
}

func projectPolicy(ctx context.Context, b *batch, ev *eventsv1.RuntimeEvent, pc *eventsv1.PolicyChanged) error {
	tenant := ev.GetTenantId()
	switch pc.GetChange().(type) {
	case *eventsv1.PolicyChanged_HookRegistered_, *eventsv1.PolicyChanged_HookRemoved_:
		hooks := &permissionv1.ListHooksResponse{}
		if _, err := b.getProto(ctx, HooksKey(tenant), hooks); err != nil {
			return err
		}
		l := LevelFromHooks(hooks)
		l.Apply(pc)
		hooks.Hooks, hooks.Sequence = l.Hooks, ev.GetSequence()
		return b.putProto(HooksKey(tenant), hooks)
	}
	scope := scopeOf(ev, pc)
	state := &permissionv1.LevelState{}
	if _, err := b.getProto(ctx, LevelKey(tenant, scope), state); err != nil {
		return err
	}
	l := LevelFromState(state)
	l.Level = scope.Level
	l.Apply(pc)
	return b.putProto(LevelKey(tenant, scope), StateFromLevel(l, scope))
}

func scopeOf(ev *eventsv1.RuntimeEvent, pc *eventsv1.PolicyChanged) Scope {
	s := Scope{Level: pc.GetLevel()}
	switch pc.GetLevel() {
	case eventsv1.PolicyLevel_POLICY_LEVEL_WORKSPACE:
		s.WorkspaceID = pc.GetScopeId()
	case eventsv1.PolicyLevel_POLICY_LEVEL_SESSION:
		s.SessionID = pc.GetScopeId()
	case eventsv1.PolicyLevel_POLICY_LEVEL_THREAD:
		s.SessionID, s.ThreadID = ev.GetSessionId(), pc.GetScopeId()
	}
	return s
}

func projectEvaluated(ctx context.Context, b *batch, ev *eventsv1.RuntimeEvent, pe *eventsv1.PermissionEvaluated) error {
	d := &permissionv1.DecisionSummary{
		EvaluationId: pe.GetEvaluationId(), ThreadId: ev.GetThreadId(), TurnId: ev.GetTurnId(), ToolCallId: ev.GetToolCallId(),
		Name: pe.GetName(), Decision: pe.GetDecision(), DecisionSource: pe.GetDecisionSource(), DecisionReason: pe.GetDecisionReason(),
		RuleRefs: pe.GetRuleRefs(), Destructive: pe.GetDestructive(), ApprovalActionId: pe.GetApprovalActionId(),
		Sequence: ev.GetSequence(), InputRewritten: pe.GetUpdatedInputRef() != nil,
	}
	if err := b.putProto(EvaluationKey(ev.GetTenantId(), pe.GetEvaluationId()), d); err != nil {
		return err
	}
	return forSummaries(ctx, b, ev, func(s *permissionv1.GetPermissionSandboxSummaryResponse) {
		s.Mode, s.Interactive = pe.GetMode(), pe.GetInteractive()
		s.RecentDecisions = prepend(s.RecentDecisions, d)
		if pe.GetDecision() == eventsv1.Decision_DECISION_DENY || pe.GetDecision() == eventsv1.Decision_DECISION_UNAVAILABLE {
			s.LastDenial = &permissionv1.Explanation{State: commonv1.FactState_FACT_STATE_KNOWN, Cause: pe.GetDecisionSource(),
				Reason: pe.GetDecisionReason(), EvaluationId: pe.GetEvaluationId(), RuleRefs: pe.GetRuleRefs()}
		}
	})
}

func projectRequested(ctx context.Context, b *batch, ev *eventsv1.RuntimeEvent, pr *eventsv1.PermissionRequested) error {
	raw, err := proto.Marshal(pr)
	if err != nil {
		return err
	}
	doc := ApprovalDoc{ActionID: ev.GetActionId(), EvaluationID: pr.GetEvaluationId(), SessionID: ev.GetSessionId(), ThreadID: ev.GetThreadId(),
		TurnID: ev.GetTurnId(), StepID: ev.GetStepId(), ToolCallID: ev.GetToolCallId(), ProcessID: ev.GetProcessId(),
		RequestedAt: ev.GetTimestamp().AsTime(), Requested: raw}
	v, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	b.put(ApprovalKey(ev.GetTenantId(), ev.GetActionId()), v)
	return forSummaries(ctx, b, ev, func(s *permissionv1.GetPermissionSandboxSummaryResponse) {
		s.PendingApprovals = append(s.PendingApprovals, &permissionv1.PendingApproval{
			ActionId: ev.GetActionId(), EvaluationId: pr.GetEvaluationId(), ThreadId: ev.GetThreadId(), TurnId: ev.GetTurnId(),
			Name: pr.GetName(), Prompt: pr.GetPrompt(), RequestedAt: ev.GetTimestamp(), Timeout: pr.GetTimeout(),
		})
	})
}

func projectResolved(ctx context.Context, b *batch, ev *eventsv1.RuntimeEvent, pr *eventsv1.PermissionResolved) error {
	key := ApprovalKey(ev.GetTenantId(), ev.GetActionId())
	raw, err := b.get(ctx, key)
	if err != nil {
		return err
	}
	if raw == nil {
		return fmt.Errorf("permission.resolved for unknown action %s", ev.GetActionId())
	}
	var doc ApprovalDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return err
	}
	if doc.Resolved, err = proto.Marshal(pr); err != nil {
		return err
	}
	v, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	b.put(key, v)
	return forSummaries(ctx, b, ev, func(s *permissionv1.GetPermissionSandboxSummaryResponse) {
		kept := s.PendingApprovals[:0]
		for _, p := range s.PendingApprovals {
			if p.GetActionId() != ev.GetActionId() {
				kept = append(kept, p)
			}
		}
		s.PendingApprovals = kept
		for _, d := range s.RecentDecisions {
			if d.GetApprovalActionId() == ev.GetActionId() {
				d.Resolution = pr.GetResolution()
			}
		}
		if !pr.GetAllowed() {
			reason := "the request was " + map[eventsv1.PermissionResolution]string{
				eventsv1.PermissionResolution_PERMISSION_RESOLUTION_DENIED:    "denied by " + pr.GetResponder(),
				eventsv1.PermissionResolution_PERMISSION_RESOLUTION_TIMED_OUT: "not answered in time (decision on timeout: deny)",
				eventsv1.PermissionResolution_PERMISSION_RESOLUTION_CANCELLED: "cancelled before anyone answered",
			}[pr.GetResolution()]
			s.LastDenial = &permissionv1.Explanation{State: commonv1.FactState_FACT_STATE_KNOWN, Cause: eventsv1.DecisionSource_DECISION_SOURCE_HUMAN,
				Reason: reason, EvaluationId: pr.GetEvaluationId()}
		}
	})
}

func projectSandboxApplied(ctx context.Context, b *batch, ev *eventsv1.RuntimeEvent, sa *eventsv1.SandboxApplied) error {
	if sa.GetTarget() == eventsv1.SandboxTarget_SANDBOX_TARGET_TURN {
		return b.putProto(EnvironmentKey(ev.GetTenantId(), ev.GetSessionId(), ev.GetTurnId()), &permissionv1.GetExecutionEnvironmentResponse{
			Environment: sa.GetEnvironment(), ThreadId: ev.GetThreadId(), RecordedAt: ev.GetTimestamp(), Sequence: ev.GetSequence(),
		})
	}
	return forSummaries(ctx, b, ev, func(s *permissionv1.GetPermissionSandboxSummaryResponse) {
		s.SandboxProfile = proto.Clone(sa.GetProfile()).(*eventsv1.SandboxProfile)
		s.SandboxState = commonv1.FactState_FACT_STATE_KNOWN
	})
}

func upsertHookRun(ctx context.Context, b *batch, ev *eventsv1.RuntimeEvent, run *permissionv1.HookRunSummary) error {
	return forSummaries(ctx, b, ev, func(s *permissionv1.GetPermissionSandboxSummaryResponse) {
		for i, r := range s.RecentHookRuns {
			if r.GetHookRunId() == run.GetHookRunId() {
				s.RecentHookRuns[i] = run
				return
			}
		}
		s.RecentHookRuns = prepend(s.RecentHookRuns, run)
	})
}

// forSummaries applies fn to the session's summary and, when the event
// names a thread, to the thread's.
func forSummaries(ctx context.Context, b *batch, ev *eventsv1.RuntimeEvent, fn func(*permissionv1.GetPermissionSandboxSummaryResponse)) error {
	keys := []string{SummaryKey(ev.GetTenantId(), ev.GetSessionId(), "")}
	if ev.GetThreadId() != "" {
		keys = append(keys, SummaryKey(ev.GetTenantId(), ev.GetSessionId(), ev.GetThreadId()))
	}
	for _, k := range keys {
		s := &permissionv1.GetPermissionSandboxSummaryResponse{}
		if _, err := b.getProto(ctx, k, s); err != nil {
			return err
		}
		fn(s)
		s.Sequence = ev.GetSequence()
		if err := b.putProto(k, s); err != nil {
			return err
		}
	}
	return nil
}

func prepend[T any](list []T, v T) []T {
	out := append([]T{v}, list...)
	if len(out) > recentLimit {
		out = out[:recentLimit]
	}
	return out
}

func DurationOrZero(d *durationpb.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.AsDuration()
}
