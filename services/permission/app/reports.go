package app

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/permission/domain"
	"github.com/agentruntime/agentruntime/services/permission/readmodel"
)

// ViolationInput is a violation a worker's sandbox observed.
type ViolationInput struct {
	SessionID, ThreadID, TurnID, StepID, ToolCallID, ProcessID string
	Kind                                                       eventsv1.ViolationKind
	Target, Reason, EvaluationID                               string
	Blocked                                                    bool
	Reporter                                                   string
}

// ReportViolation records sandbox.violation. Paths are normalized when
// they can be; a target that cannot is kept as given (it is evidence).
func (a *App) ReportViolation(ctx context.Context, tenant string, in ViolationInput) (*eventsv1.SandboxViolation, *commonv1.WriteResult, error) {
	target := in.Target
	if in.Kind != eventsv1.ViolationKind_VIOLATION_KIND_NETWORK && in.Kind != eventsv1.ViolationKind_VIOLATION_KIND_PROCESS {
		if n, err := domain.NormalizePath("/", target); err == nil {
			target = n
		}
	}
	v := &eventsv1.SandboxViolation{Kind: in.Kind, Target: target, Reason: in.Reason, EvaluationId: in.EvaluationID, DetectedBy: in.Reporter, Blocked: in.Blocked}
	ev := domain.ReportedViolation(domain.Scope{Session: in.SessionID, Thread: in.ThreadID, Turn: in.TurnID,
		Step: in.StepID, ToolCall: in.ToolCallID, Process: in.ProcessID}, v)
	// A report is a new fact about the past; nothing can conflict with it.
	appended, err := a.log.Append(ctx, eventlog.Aggregate{Tenant: tenant, Session: in.SessionID, Kind: readmodel.KindReport, ID: ids.New("viol")}, eventlog.ExpectSequence(0), ev)
	if err != nil {
		return nil, nil, err
	}
	return v, command.Result{Appended: appended, Sequence: appended[0].Sequence}.Write(), nil
}

// AppliedInput is the profile an executing host applied to a tool call or
// a process.
type AppliedInput struct {
	SessionID, ThreadID, TurnID, StepID, ToolCallID, ProcessID string
	Target                                                     eventsv1.SandboxTarget
	Name, EvaluationID                                         string
	Profile                                                    *eventsv1.SandboxProfile
	Network                                                    eventsv1.NetworkEnforcement
	NetworkReason                                              string
	EnvAllowlist                                               []string
	Reporter                                                   string
}

// ReportApplied records sandbox.applied for what a host enforced at
// execution. The roots and cwd are normalized like a policy's, so the
// record compares with the decided profile; a path that cannot be
// normalized is the caller's mistake (a field error), not evidence to keep.
func (a *App) ReportApplied(ctx context.Context, tenant string, in AppliedInput) (*eventsv1.SandboxApplied, *commonv1.WriteResult, error) {
	sa, ev, err := appliedFact(in, "")
	if err != nil {
		return nil, nil, err
	}
	// Like a violation, a report of the past: its own aggregate.
	appended, err := a.log.Append(ctx, eventlog.Aggregate{Tenant: tenant, Session: in.SessionID, Kind: readmodel.KindReport, ID: ids.New("appl")}, eventlog.ExpectSequence(0), ev)
	if err != nil {
		return nil, nil, err
	}
	return sa, command.Result{Appended: appended, Sequence: appended[0].Sequence}.Write(), nil
}

// appliedFact is sandbox.applied of what a host enforced, its roots and
// cwd normalized; a path that cannot be is a field error under field
// (the request's field that holds the profile's parent, "" for the
// request itself).
func appliedFact(in AppliedInput, field string) (*eventsv1.SandboxApplied, *eventsv1.RuntimeEvent, error) {
	profile := proto.Clone(in.Profile).(*eventsv1.SandboxProfile)
	var err error
	if profile.ReadRoots, err = domain.NormalizeRoots(profile.GetReadRoots()); err != nil {
		return nil, nil, fault.Invalid(field+"profile.read_roots", "%s", err.Error())
	}
	if profile.WriteRoots, err = domain.NormalizeRoots(profile.GetWriteRoots()); err != nil {
		return nil, nil, fault.Invalid(field+"profile.write_roots", "%s", err.Error())
	}
	if profile.GetCwd() != "" {
		if profile.Cwd, err = domain.NormalizePath("/", profile.GetCwd()); err != nil {
			return nil, nil, fault.Invalid(field+"profile.cwd", "%s", err.Error())
		}
	}
	sa := &eventsv1.SandboxApplied{Target: in.Target, Name: in.Name, EvaluationId: in.EvaluationID, Profile: profile,
		NetworkEnforcement: in.Network, NetworkEnforcementReason: in.NetworkReason, EnvAllowlist: in.EnvAllowlist, AppliedBy: in.Reporter}
	ev := domain.ReportedApplied(domain.Scope{Session: in.SessionID, Thread: in.ThreadID, Turn: in.TurnID,
		Step: in.StepID, ToolCall: in.ToolCallID, Process: in.ProcessID}, sa)
	return sa, ev, nil
}

// EnvironmentInput is what the executing host knows about a turn.
type EnvironmentInput struct {
	SessionID, ThreadID, TurnID, WorkspaceID string
	Cwd                                      string
	AdditionalRoots                          []string
	Shell, OS, Arch, EnvRef                  string
}

// ReportEnvironment records a turn's execution environment snapshot
// (sandbox.applied, target turn): the host's facts joined to the policy's
// sandbox, network and limits at this moment.
func (a *App) ReportEnvironment(ctx context.Context, tenant string, in EnvironmentInput) (*eventsv1.ExecutionEnvironment, *commonv1.WriteResult, error) {
	// The snapshot joins the policy as of now: a profile set just before,
	// on any replica, must be in it. The levels are caught up from their
	// subjects, not waited for in the read model.
	levels, err := a.currentLevels(ctx, tenant, in.WorkspaceID, in.SessionID, in.ThreadID)
	if err != nil {
		return nil, nil, err
	}
	p := domain.Effective(levels...)
	profile := proto.Clone(p.Sandbox).(*eventsv1.SandboxProfile)
	if in.Cwd != "" {
		cwd, err := domain.NormalizePath(profile.GetCwd(), in.Cwd)
		if err != nil {
			return nil, nil, fault.Invalid("cwd", "%s", err.Error())
		}
		profile.Cwd = cwd
	}
	roots, err := domain.NormalizeRoots(in.AdditionalRoots)
	if err != nil {
		return nil, nil, fault.Invalid("additional_roots", "%s", err.Error())
	}
	env := &eventsv1.ExecutionEnvironment{
		WorkspaceId: in.WorkspaceID, Cwd: profile.GetCwd(), AdditionalRoots: roots, Shell: in.Shell, Os: in.OS, Arch: in.Arch,
		EnvRef: in.EnvRef, SandboxProfile: profile, Network: profile.GetNetwork(), AllowedHosts: profile.GetAllowedHosts(),
		ResourceLimits: profile.GetProcessLimits(),
	}
	if env.EnvRef == "" {
		env.EnvRef = profile.GetEnvironmentRef()
	}
	ev := domain.ReportedApplied(domain.Scope{Session: in.SessionID, Thread: in.ThreadID, Turn: in.TurnID}, &eventsv1.SandboxApplied{
		Target: eventsv1.SandboxTarget_SANDBOX_TARGET_TURN, Name: in.TurnID, Profile: profile, Environment: env})
	appended, err := a.log.Append(ctx, eventlog.Aggregate{Tenant: tenant, Session: in.SessionID, Kind: readmodel.KindEnvironment, ID: in.TurnID}, eventlog.Any, ev)
	if err != nil {
		return nil, nil, err
	}
	return env, command.Result{Appended: appended, Sequence: appended[0].Sequence}.Write(), nil
}

// Environment returns a turn's latest execution environment snapshot.
func (a *App) Environment(ctx context.Context, tenant, session, turn string, minSequence uint64) (*permissionv1.GetExecutionEnvironmentResponse, error) {
	seq, err := a.waitFor(ctx, minSequence)
	if err != nil {
		return nil, err
	}
	raw, err := a.store.Get(ctx, readmodel.EnvironmentKey(tenant, session, turn))
	if errors.Is(err, projection.ErrNotFound) {
		return nil, fault.NotFound("execution environment of turn", turn)
	}
	if err != nil {
		return nil, err
	}
	out := &permissionv1.GetExecutionEnvironmentResponse{}
	if err := proto.Unmarshal(raw, out); err != nil {
		return nil, err
	}
	out.Sequence = seq
	return out, nil
}

// Summary returns the permission and sandbox summary of a session or
// thread. A scope with no facts yet answers with what the policy says and
// marks the sandbox unknown and the denial not applicable, rather than
// inventing an applied profile.
func (a *App) Summary(ctx context.Context, tenant, session, thread string, minSequence uint64) (*permissionv1.GetPermissionSandboxSummaryResponse, error) {
	seq, err := a.waitFor(ctx, minSequence)
	if err != nil {
		return nil, err
	}
	out := &permissionv1.GetPermissionSandboxSummaryResponse{}
	raw, err := a.store.Get(ctx, readmodel.SummaryKey(tenant, session, thread))
	switch {
	case errors.Is(err, projection.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		if err := proto.Unmarshal(raw, out); err != nil {
			return nil, err
		}
	}
	if len(out.GetRecentDecisions()) == 0 {
		// No decision yet: the mode is the policy's, as of now.
		levels, err := a.levels(ctx, tenant, "", session, thread)
		if err != nil {
			return nil, err
		}
		p := domain.Effective(levels...)
		out.Mode, out.Interactive = p.Mode, p.MayAsk()
	}
	if out.GetSandboxProfile() == nil {
		out.SandboxState = commonv1.FactState_FACT_STATE_UNKNOWN
	}
	if out.GetLastDenial() == nil {
		out.LastDenial = &permissionv1.Explanation{State: commonv1.FactState_FACT_STATE_NOT_APPLICABLE}
	}
	out.Sequence = max(out.GetSequence(), seq)
	return out, nil
}
