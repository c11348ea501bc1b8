// Package api is the permission service's transport: each handler is
// kit.Call (the caller from the credentials, the use case, grpcerr.Status
// for its error) around what the RPC translates between proto and the use
// case.
package api

import (
	"context"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/held"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/permission/app"
	"github.com/agentruntime/agentruntime/services/permission/domain"
)

// Handler implements permissionv1.PermissionServiceServer.
type Handler struct {
	permissionv1.UnimplementedPermissionServiceServer
	App *app.App
	// Held is the store of what workers hold (held.go).
	Held *held.Store
}

// EvaluatePermission implements the RPC.
func (h *Handler) EvaluatePermission(ctx context.Context, req *permissionv1.EvaluatePermissionRequest) (*permissionv1.EvaluatePermissionResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *permissionv1.EvaluatePermissionRequest) (*permissionv1.EvaluatePermissionResponse, error) {
		resolved := map[string]string{}
		for _, r := range req.GetResolvedPaths() {
			resolved[r.GetPath()] = r.GetResolved()
		}
		out, err := h.App.Evaluate(ctx, p.Tenant, app.EvaluateInput{
			SessionID: req.GetSessionId(), ThreadID: req.GetThreadId(), TurnID: req.GetTurnId(), StepID: req.GetStepId(),
			ToolCallID: req.GetToolCallId(), ProcessID: req.GetProcessId(), WorkspaceID: req.GetWorkspaceId(),
			Target: req.GetTarget(), Name: req.GetName(), Access: req.GetAccess(), Paths: req.GetPaths(), Command: req.GetCommand(),
			Hosts: req.GetHosts(), Cwd: req.GetCwd(), Resolved: resolved, ArgumentsJSON: req.GetArgumentsJson(), SkipHooks: req.GetSkipHooks(),
			ApprovalTimeout: req.GetApprovalTimeout().AsDuration(), MinSequence: req.GetMinSequence(), Requester: p,
			AppliedIfAllowed: enforcement(req.GetAppliedIfAllowed()),
		})
		if err != nil {
			return nil, err
		}
		return &permissionv1.EvaluatePermissionResponse{Evaluation: out.Evaluation, SandboxProfile: out.Profile,
			UpdatedArgumentsJson: out.UpdatedInput, Write: out.Write, SandboxApplied: out.Applied}, nil
	})
}

// enforcement is applied_if_allowed for the use case (nil when absent).
func enforcement(e *permissionv1.SandboxEnforcement) *app.Enforcement {
	if e == nil {
		return nil
	}
	return &app.Enforcement{Profile: e.GetProfile(), Network: e.GetNetworkEnforcement(),
		NetworkReason: e.GetNetworkEnforcementReason(), EnvAllowlist: e.GetEnvAllowlist()}
}

// ResolvePermission implements the RPC.
func (h *Handler) ResolvePermission(ctx context.Context, req *permissionv1.ResolvePermissionRequest) (*permissionv1.ResolvePermissionResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *permissionv1.ResolvePermissionRequest) (*permissionv1.ResolvePermissionResponse, error) {
		res, w, err := h.App.Resolve(ctx, p.Tenant, app.ResolveInput{Session: req.GetSessionId(), ActionID: req.GetActionId(), Answer: domain.Answer{
			Outcome: eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED, Decision: req.GetDecision(), Responder: p.Subject, By: &p,
		}})
		if err != nil {
			return nil, err
		}
		return &permissionv1.ResolvePermissionResponse{Resolution: res, Write: w}, nil
	})
}

// GetPermissionState implements the RPC.
func (h *Handler) GetPermissionState(ctx context.Context, req *permissionv1.GetPermissionStateRequest) (*permissionv1.GetPermissionStateResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *permissionv1.GetPermissionStateRequest) (*permissionv1.GetPermissionStateResponse, error) {
		t := req.GetTarget()
		if err := h.checkTargetHeld(ctx, p, t); err != nil {
			return nil, err
		}
		st, err := h.App.PermissionState(ctx, p.Tenant, t.GetWorkspaceId(), t.GetSessionId(), t.GetThreadId(), req.GetMinSequence())
		if err != nil {
			return nil, err
		}
		return &permissionv1.GetPermissionStateResponse{Mode: st.Policy.Mode, ModeLevel: st.Policy.ModeLevel, Interactive: st.Policy.MayAsk(),
			Rules: st.Policy.Rules, Levels: st.Levels, Sequence: st.Sequence}, nil
	})
}

// SetPermissionMode implements the RPC.
func (h *Handler) SetPermissionMode(ctx context.Context, req *permissionv1.SetPermissionModeRequest) (*permissionv1.SetPermissionModeResponse, error) {
	return kit.Call(ctx, req, h.App.SetMode)
}

// PutRules implements the RPC.
func (h *Handler) PutRules(ctx context.Context, req *permissionv1.PutRulesRequest) (*permissionv1.PutRulesResponse, error) {
	return kit.Call(ctx, req, h.App.PutRules)
}

// SetSandboxProfile implements the RPC.
func (h *Handler) SetSandboxProfile(ctx context.Context, req *permissionv1.SetSandboxProfileRequest) (*permissionv1.SetSandboxProfileResponse, error) {
	return kit.Call(ctx, req, h.App.SetSandbox)
}

// GetSandboxProfile implements the RPC.
func (h *Handler) GetSandboxProfile(ctx context.Context, req *permissionv1.GetSandboxProfileRequest) (*permissionv1.GetSandboxProfileResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *permissionv1.GetSandboxProfileRequest) (*permissionv1.GetSandboxProfileResponse, error) {
		t := req.GetTarget()
		if err := h.checkTargetHeld(ctx, p, t); err != nil {
			return nil, err
		}
		st, err := h.App.PermissionState(ctx, p.Tenant, t.GetWorkspaceId(), t.GetSessionId(), t.GetThreadId(), req.GetMinSequence())
		if err != nil {
			return nil, err
		}
		return &permissionv1.GetSandboxProfileResponse{Profile: st.Policy.Sandbox, Level: st.Policy.SandboxLevel, Sequence: st.Sequence}, nil
	})
}

// ReportSandboxViolation implements the RPC.
func (h *Handler) ReportSandboxViolation(ctx context.Context, req *permissionv1.ReportSandboxViolationRequest) (*permissionv1.ReportSandboxViolationResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *permissionv1.ReportSandboxViolationRequest) (*permissionv1.ReportSandboxViolationResponse, error) {
		v, w, err := h.App.ReportViolation(ctx, p.Tenant, app.ViolationInput{
			SessionID: req.GetSessionId(), ThreadID: req.GetThreadId(), TurnID: req.GetTurnId(), StepID: req.GetStepId(), ToolCallID: req.GetToolCallId(),
			ProcessID: req.GetProcessId(), Kind: req.GetKind(), Target: req.GetTarget(), Reason: req.GetReason(),
			EvaluationID: req.GetEvaluationId(), Blocked: req.GetBlocked(), Reporter: p.Subject,
		})
		if err != nil {
			return nil, err
		}
		return &permissionv1.ReportSandboxViolationResponse{Violation: v, Write: w}, nil
	})
}

// ReportSandboxApplied implements the RPC.
func (h *Handler) ReportSandboxApplied(ctx context.Context, req *permissionv1.ReportSandboxAppliedRequest) (*permissionv1.ReportSandboxAppliedResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *permissionv1.ReportSandboxAppliedRequest) (*permissionv1.ReportSandboxAppliedResponse, error) {
		sa, w, err := h.App.ReportApplied(ctx, p.Tenant, app.AppliedInput{
			SessionID: req.GetSessionId(), ThreadID: req.GetThreadId(), TurnID: req.GetTurnId(), StepID: req.GetStepId(),
			ToolCallID: req.GetToolCallId(), ProcessID: req.GetProcessId(), Target: req.GetTarget(), Name: req.GetName(),
			EvaluationID: req.GetEvaluationId(), Profile: req.GetProfile(), Network: req.GetNetworkEnforcement(),
			NetworkReason: req.GetNetworkEnforcementReason(), EnvAllowlist: req.GetEnvAllowlist(), Reporter: p.Subject,
		})
		if err != nil {
			return nil, err
		}
		return &permissionv1.ReportSandboxAppliedResponse{Applied: sa, Write: w}, nil
	})
}

// RegisterHook implements the RPC.
func (h *Handler) RegisterHook(ctx context.Context, req *permissionv1.RegisterHookRequest) (*permissionv1.RegisterHookResponse, error) {
	return kit.Call(ctx, req, h.App.RegisterHook)
}

// RemoveHook implements the RPC.
func (h *Handler) RemoveHook(ctx context.Context, req *permissionv1.RemoveHookRequest) (*permissionv1.RemoveHookResponse, error) {
	return kit.Call(ctx, req, h.App.RemoveHook)
}

// ListHooks implements the RPC.
func (h *Handler) ListHooks(ctx context.Context, req *permissionv1.ListHooksRequest) (*permissionv1.ListHooksResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *permissionv1.ListHooksRequest) (*permissionv1.ListHooksResponse, error) {
		hooks, seq, err := h.App.ListHooks(ctx, p.Tenant, req.GetPoint(), req.GetMinSequence())
		if err != nil {
			return nil, err
		}
		return &permissionv1.ListHooksResponse{Hooks: hooks, Sequence: seq}, nil
	})
}

// RunHooks implements the RPC.
func (h *Handler) RunHooks(ctx context.Context, req *permissionv1.RunHooksRequest) (*permissionv1.RunHooksResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *permissionv1.RunHooksRequest) (*permissionv1.RunHooksResponse, error) {
		out, err := h.App.RunHooks(ctx, p.Tenant, app.RunHooksInput{
			Point: req.GetPoint(), SessionID: req.GetSessionId(), ThreadID: req.GetThreadId(), TurnID: req.GetTurnId(), StepID: req.GetStepId(),
			ToolCallID: req.GetToolCallId(), WorkspaceID: req.GetWorkspaceId(), ToolName: req.GetToolName(), ToolInput: req.GetToolInputJson(),
			ToolOutput: req.GetToolOutputJson(), Prompt: req.GetPrompt(), Cwd: req.GetCwd(),
		})
		if err != nil {
			return nil, err
		}
		return &permissionv1.RunHooksResponse{Results: out.Results, Decision: out.Decision, Reason: out.Reason,
			UpdatedInputJson: out.UpdatedInput, Write: out.Write}, nil
	})
}

// ReportExecutionEnvironment implements the RPC.
func (h *Handler) ReportExecutionEnvironment(ctx context.Context, req *permissionv1.ReportExecutionEnvironmentRequest) (*permissionv1.ReportExecutionEnvironmentResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *permissionv1.ReportExecutionEnvironmentRequest) (*permissionv1.ReportExecutionEnvironmentResponse, error) {
		env, w, err := h.App.ReportEnvironment(ctx, p.Tenant, app.EnvironmentInput{
			SessionID: req.GetSessionId(), ThreadID: req.GetThreadId(), TurnID: req.GetTurnId(), WorkspaceID: req.GetWorkspaceId(),
			Cwd: req.GetCwd(), AdditionalRoots: req.GetAdditionalRoots(), Shell: req.GetShell(), OS: req.GetOs(), Arch: req.GetArch(), EnvRef: req.GetEnvRef(),
		})
		if err != nil {
			return nil, err
		}
		return &permissionv1.ReportExecutionEnvironmentResponse{Environment: env, Write: w}, nil
	})
}

// GetExecutionEnvironment implements the RPC.
func (h *Handler) GetExecutionEnvironment(ctx context.Context, req *permissionv1.GetExecutionEnvironmentRequest) (*permissionv1.GetExecutionEnvironmentResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *permissionv1.GetExecutionEnvironmentRequest) (*permissionv1.GetExecutionEnvironmentResponse, error) {
		if err := h.Held.CheckSession(ctx, p, req.GetSessionId(), "session_id"); err != nil {
			return nil, err
		}
		return h.App.Environment(ctx, p.Tenant, req.GetSessionId(), req.GetTurnId(), req.GetMinSequence())
	})
}

// GetPermissionSandboxSummary implements the RPC.
func (h *Handler) GetPermissionSandboxSummary(ctx context.Context, req *permissionv1.GetPermissionSandboxSummaryRequest) (*permissionv1.GetPermissionSandboxSummaryResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *permissionv1.GetPermissionSandboxSummaryRequest) (*permissionv1.GetPermissionSandboxSummaryResponse, error) {
		return h.App.Summary(ctx, p.Tenant, req.GetSessionId(), req.GetThreadId(), req.GetMinSequence())
	})
}
