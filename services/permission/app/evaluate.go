package app

import (
	"context"
	"encoding/json"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/services/permission/domain"
	"github.com/agentruntime/agentruntime/services/permission/readmodel"
)

// DefaultApprovalTimeout is how long a human has when the caller does not
// say.
const DefaultApprovalTimeout = 5 * time.Minute

// previewBytes bounds argument previews in facts.
const previewBytes = 1024

// EvaluateInput is one EvaluatePermission request.
type EvaluateInput struct {
	SessionID, ThreadID, TurnID, StepID, ToolCallID, ProcessID, WorkspaceID string

	Target        eventsv1.TargetKind
	Name          string
	Access        eventsv1.Access
	Paths         []string
	Command       string
	Hosts         []string
	Cwd           string
	Resolved      map[string]string
	ArgumentsJSON string
	SkipHooks     bool
	// ApprovalTimeout: 0 takes DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// MinSequence: decide on a policy at least this recent (the sequence a
	// policy write answered with).
	MinSequence uint64
	// Requester is the caller; a request for approval records it, and it
	// may never answer that request when it is a worker.
	Requester auth.Principal
	// AppliedIfAllowed is what the caller runs a tool call under when it
	// runs now as asked: recorded as its sandbox.applied with the
	// decision (nil: the caller reports it).
	AppliedIfAllowed *Enforcement
}

// Enforcement is what an executing host enforces for one call.
type Enforcement struct {
	Profile       *eventsv1.SandboxProfile
	Network       eventsv1.NetworkEnforcement
	NetworkReason string
	EnvAllowlist  []string
}

// EvaluateOutput is the decision and what it recorded.
type EvaluateOutput struct {
	Evaluation    *eventsv1.PermissionEvaluated
	Profile       *eventsv1.SandboxProfile
	UpdatedInput  string
	Write         *commonv1.WriteResult
	ApprovalAsked bool
	// Applied is the sandbox.applied recorded from AppliedIfAllowed (nil:
	// none was).
	Applied *eventsv1.SandboxApplied
}

// Evaluate decides whether a tool call, process or action may run and
// records why: hook.* (pre_tool_use hooks), permission.evaluated,
// sandbox.violation for each target outside the sandbox, and
// sandbox.applied when it may run now; for an ask, permission.requested
// with a new action id, which the control service opens as
// action.required. With AppliedIfAllowed, a tool call that runs now as
// asked also gets the caller's sandbox.applied in the same write.
func (a *App) Evaluate(ctx context.Context, tenant string, in EvaluateInput) (EvaluateOutput, error) {
	if in.AppliedIfAllowed != nil && (in.Target != eventsv1.TargetKind_TARGET_KIND_TOOL || in.StepID == "" || in.ToolCallID == "") {
		return EvaluateOutput{}, fault.Invalid("applied_if_allowed", "%s", "needs a tool target with step_id and tool_call_id")
	}
	if e := in.AppliedIfAllowed; e != nil {
		// A profile that cannot be recorded is refused before any hook runs.
		if _, _, err := appliedFact(AppliedInput{Profile: e.Profile}, "applied_if_allowed."); err != nil {
			return EvaluateOutput{}, err
		}
	}
	cps, err := a.waitCheckpoints(ctx, in.MinSequence)
	if err != nil {
		return EvaluateOutput{}, err
	}
	levels, err := a.policyLevels(ctx, tenant, in.WorkspaceID, in.SessionID, in.ThreadID, cps)
	if err != nil {
		return EvaluateOutput{}, err
	}
	policy := domain.Effective(levels...)
	evalID := ids.New("pev")
	scope := domain.Scope{Session: in.SessionID, Thread: in.ThreadID, Turn: in.TurnID, Step: in.StepID, ToolCall: in.ToolCallID, Process: in.ProcessID}
	hs := &hookScope{
		tenant: tenant, agg: eventlog.Aggregate{Tenant: tenant, Session: in.SessionID, Kind: readmodel.KindEvaluation, ID: evalID},
		scope: scope, evaluationID: evalID, objectPrefix: "permission/" + tenant + "/" + evalID,
	}

	req := domain.Request{Target: in.Target, Name: in.Name, Access: in.Access, Paths: in.Paths, Command: in.Command,
		Hosts: in.Hosts, Cwd: in.Cwd, Resolved: in.Resolved, Now: a.now()}
	profileCwd := policy.Sandbox.GetCwd()
	if in.Cwd != "" {
		profileCwd = in.Cwd
	}

	// pre_tool_use hooks take part in tool and process decisions.
	hookVerdict := domain.Verdict{}
	var hookRunIDs []string
	var rewrittenRef *commonv1.OutputRef
	rewritten := ""
	if !in.SkipHooks && in.Target != eventsv1.TargetKind_TARGET_KIND_ACTION {
		hooks := domain.HooksFor(levels[0].Hooks, eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE, in.Name, in.WorkspaceID)
		if len(hooks) > 0 {
			hookIn := &permissionv1.HandleHookRequest{
				Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE, TenantId: tenant, SessionId: in.SessionID, ThreadId: in.ThreadID,
				TurnId: in.TurnID, StepId: in.StepID, ToolCallId: in.ToolCallID, WorkspaceId: in.WorkspaceID, Cwd: profileCwd,
				Mode: policy.Mode, SandboxSummary: sandboxSummary(policy.Sandbox), Sandbox: hookSafeProfile(policy.Sandbox),
				ToolName: in.Name, ToolInputJson: domain.RedactJSON(in.ArgumentsJSON),
			}
			runs, rw, err := a.runHooks(ctx, hs, hooks, hookIn)
			if err != nil {
				return EvaluateOutput{}, err
			}
			results := make([]domain.HookResult, 0, len(runs))
			for _, r := range runs {
				results = append(results, r.result)
				hookRunIDs = append(hookRunIDs, r.runID)
				if r.refs.input != nil {
					rewrittenRef = r.refs.input
				}
			}
			hookVerdict = domain.CombineHooks(results)
			rewritten = rw
		}
	}
	if rewritten != "" {
		// The call will run with the rewritten input, so that is what is
		// judged: its command and paths replace the ones given.
		applyRewrite(&req, rewritten)
	}

	ev := domain.Evaluate(policy, hookVerdict, req)
	if in.Cwd == "" && ev.Profile.GetCwd() == "" {
		ev.Profile.Cwd = profileCwd
	}
	preview := domain.SafeJSON(in.ArgumentsJSON, previewBytes)
	if rewritten != "" {
		preview = domain.SafeJSON(rewritten, previewBytes)
	}
	if preview == "" && in.Command != "" {
		preview = domain.SafePreview(req.Command, previewBytes)
	}
	judged := domain.Judged{EvaluationID: evalID, Target: in.Target, Name: in.Name, Access: in.Access,
		Mode: policy.Mode, Interactive: policy.MayAsk(), HookRunIDs: hookRunIDs, ArgumentsPreview: preview, UpdatedInputRef: rewrittenRef}
	if ev.Decision == eventsv1.Decision_DECISION_ASK {
		judged.ApprovalActionID = ids.New(ids.PermissionAction)
	}
	actionID := judged.ApprovalActionID
	pe, evs := domain.Evaluated(scope, judged, ev)
	var applied *eventsv1.SandboxApplied
	if e := in.AppliedIfAllowed; e != nil && ev.RunsNow() && rewritten == "" {
		sa, fact, err := appliedFact(AppliedInput{SessionID: in.SessionID, ThreadID: in.ThreadID, TurnID: in.TurnID, StepID: in.StepID,
			ToolCallID: in.ToolCallID, Target: eventsv1.SandboxTarget_SANDBOX_TARGET_TOOL, Name: in.Name, EvaluationID: evalID,
			Profile: e.Profile, Network: e.Network, NetworkReason: e.NetworkReason, EnvAllowlist: e.EnvAllowlist, Reporter: in.Requester.Subject},
			"applied_if_allowed.")
		if err != nil {
			return EvaluateOutput{}, err
		}
		evs, applied = append(evs, fact), sa
	}
	// The decision and its sandbox facts land whole (one atomic batch) on
	// the evaluation, after its hook facts.
	res, err := a.appendOwn(ctx, hs.agg, hs.last, evs...)
	if err != nil {
		return EvaluateOutput{}, err
	}
	out := EvaluateOutput{Evaluation: pe, Profile: ev.Profile, UpdatedInput: rewritten, Applied: applied}
	out.Write = res.Write()
	if actionID == "" {
		return out, nil
	}

	timeout := in.ApprovalTimeout
	if timeout <= 0 {
		timeout = DefaultApprovalTimeout
	}
	// What the person sees is built here, from what was judged: the
	// control service shows this prompt on the action it opens, whose id
	// (ids.PermissionAction) no caller can take first.
	paths, hosts := ev.Paths, ev.Hosts
	if len(paths) == 0 {
		paths = req.Paths
	}
	if len(hosts) == 0 {
		hosts = req.Hosts
	}
	prompt := domain.ApprovalPrompt(in.Target, in.Name, in.Access, req.Command, paths, hosts, ev.Reason)
	requested := domain.Requested(scope, judged, ev, domain.Ask{Prompt: prompt, Timeout: timeout,
		RequesterSubject: in.Requester.Subject, RequesterRole: in.Requester.Role})
	// A new aggregate per request: permission.resolved later appends to it
	// with the expected sequence, so a request resolves exactly once.
	appr, err := a.appendOwn(ctx, eventlog.Aggregate{Tenant: tenant, Session: in.SessionID, Kind: readmodel.KindApproval, ID: actionID}, 0, requested)
	if err != nil {
		return EvaluateOutput{}, err
	}
	out.Write.EventIds = append(out.Write.EventIds, appr.Appended[0].EventID)
	out.Write.Sequence = appr.Sequence
	out.ApprovalAsked = true
	return out, nil
}

// hookSafeProfile is the profile as hooks see it: the environment stays a
// reference.
func hookSafeProfile(p *eventsv1.SandboxProfile) *eventsv1.SandboxProfile {
	c := proto.Clone(p).(*eventsv1.SandboxProfile)
	c.ViolationRefs = nil
	return c
}

// applyRewrite re-derives the judged facets from a hook's rewritten input:
// the well-known keys of shell and file tools ("command", "cmd", "path",
// "file_path", "paths"). Keys the original input did not use are taken
// too: a rewrite that adds a path must not slip past the check.
func applyRewrite(req *domain.Request, rewritten string) {
	var m map[string]any
	if err := json.Unmarshal([]byte(rewritten), &m); err != nil {
		return
	}
	for _, k := range []string{"command", "cmd"} {
		if s, ok := m[k].(string); ok {
			req.Command = s
		}
	}
	var paths []string
	for _, k := range []string{"path", "file_path", "filepath"} {
		if s, ok := m[k].(string); ok && s != "" {
			paths = append(paths, s)
		}
	}
	if list, ok := m["paths"].([]any); ok {
		for _, p := range list {
			if s, ok := p.(string); ok && s != "" {
				paths = append(paths, s)
			}
		}
	}
	if len(paths) > 0 {
		req.Paths = paths
	}
}
