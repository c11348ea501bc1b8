package permission_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
)

const (
	sess   = "sess_1"
	thread = "thr_1"
	turn   = "turn_1"
)

func evalReq(name string, access eventsv1.Access) *permissionv1.EvaluatePermissionRequest {
	return &permissionv1.EvaluatePermissionRequest{SessionId: sess, ThreadId: thread, TurnId: turn, StepId: "step_1", ToolCallId: "call_1",
		Target: eventsv1.TargetKind_TARGET_KIND_TOOL, Name: name, Access: access}
}

// Spec scenario "Permission and sandbox fact": a shell or file tool's
// write records permission.evaluated and sandbox.applied first; a denial
// or an out-of-bounds access is explained by the thread read model as a
// rule, the mode, a hook, host policy or the sandbox.
func TestScenarioPermissionAndSandboxFact(t *testing.T) {
	h := newHarness(t)
	c := h.client
	_, err := c.SetSandboxProfile(h.ctx, &permissionv1.SetSandboxProfileRequest{Scope: sessionScope(sess), Profile: &eventsv1.SandboxProfile{
		Mode: eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE, Cwd: "/work", WriteRoots: []string{"/work"}, Network: eventsv1.NetworkMode_NETWORK_MODE_NONE,
		EnvironmentRef: "env://ci", ProcessLimits: &eventsv1.ProcessLimits{MaxProcesses: 64, WallTime: durationpb.New(time.Minute)},
	}})
	require.NoError(t, err)
	mode, err := c.SetPermissionMode(h.ctx, &permissionv1.SetPermissionModeRequest{Scope: sessionScope(sess), Mode: eventsv1.PermissionMode_PERMISSION_MODE_NEVER})
	require.NoError(t, err)

	// 1. A write inside the sandbox: sandboxed, evaluated then applied.
	w := evalReq("fs.write", eventsv1.Access_ACCESS_WRITE)
	w.Paths, w.MinSequence = []string{"src/main.go"}, mode.GetWrite().GetSequence()
	res, err := c.EvaluatePermission(h.ctx, w)
	require.NoError(t, err)
	assert.Equal(t, eventsv1.Decision_DECISION_SANDBOXED, res.GetEvaluation().GetDecision())
	assert.Equal(t, "/work", res.GetSandboxProfile().GetCwd())
	evs := ofType(h.history(sess), "permission.evaluated")
	require.Len(t, evs, 1)
	all := h.history(sess)
	var order []string
	for _, e := range all {
		if e.GetType() == "permission.evaluated" || e.GetType() == "sandbox.applied" {
			order = append(order, e.GetType())
		}
	}
	assert.Equal(t, []string{"permission.evaluated", "sandbox.applied"}, order)
	applied := ofType(all, "sandbox.applied")[0]
	assert.Equal(t, "call_1", applied.GetToolCallId())
	assert.Equal(t, []string{"/work"}, applied.GetSandboxApplied().GetProfile().GetWriteRoots())
	assert.Equal(t, "env://ci", applied.GetSandboxApplied().GetProfile().GetEnvironmentRef())

	explain := func(want eventsv1.DecisionSource, seq uint64) *permissionv1.Explanation {
		t.Helper()
		sum, err := c.GetPermissionSandboxSummary(h.ctx, &permissionv1.GetPermissionSandboxSummaryRequest{SessionId: sess, ThreadId: thread, MinSequence: seq})
		require.NoError(t, err)
		d := sum.GetLastDenial()
		assert.Equal(t, commonv1.FactState_FACT_STATE_KNOWN, d.GetState())
		assert.Equal(t, want, d.GetCause(), d.GetReason())
		assert.Equal(t, commonv1.FactState_FACT_STATE_KNOWN, sum.GetSandboxState())
		return d
	}

	// 2. A write escaping with "..": the sandbox denies it, with a violation.
	w.Paths = []string{"../etc/passwd"}
	res, err = c.EvaluatePermission(h.ctx, w)
	require.NoError(t, err)
	assert.Equal(t, eventsv1.Decision_DECISION_DENY, res.GetEvaluation().GetDecision())
	assert.Equal(t, []string{"/etc/passwd"}, res.GetEvaluation().GetPaths())
	d := explain(eventsv1.DecisionSource_DECISION_SOURCE_SANDBOX, res.GetWrite().GetSequence())
	assert.Contains(t, d.GetReason(), "/etc/passwd")
	viol := ofType(h.history(sess), "sandbox.violation")
	require.Len(t, viol, 1)
	assert.Equal(t, eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_WRITE, viol[0].GetSandboxViolation().GetKind())
	assert.True(t, viol[0].GetSandboxViolation().GetBlocked())

	// 3. Host policy: a tenant rule denies force pushes, for every session.
	rules, err := c.PutRules(h.ctx, &permissionv1.PutRulesRequest{Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT},
		Rules: []*eventsv1.PermissionRule{{RuleId: "no-force-push", Effect: eventsv1.RuleEffect_RULE_EFFECT_DENY, Tool: "shell", Commands: []string{"git push"}}}})
	require.NoError(t, err)
	assert.Equal(t, eventsv1.RuleSource_RULE_SOURCE_HOST, rules.GetRules()[0].GetSource())
	sh := evalReq("shell", eventsv1.Access_ACCESS_EXECUTE)
	sh.Command, sh.MinSequence = "git status && git push --force origin main", rules.GetWrite().GetSequence()
	res, err = c.EvaluatePermission(h.ctx, sh)
	require.NoError(t, err)
	ev := res.GetEvaluation()
	assert.Equal(t, eventsv1.Decision_DECISION_DENY, ev.GetDecision())
	assert.True(t, ev.GetDestructive())
	assert.NotEmpty(t, ev.GetRollbackAdvice())
	require.Len(t, ev.GetSubcommands(), 2)
	assert.Equal(t, "force push", ev.GetSubcommands()[1].GetDestructiveReason())
	d = explain(eventsv1.DecisionSource_DECISION_SOURCE_HOST_POLICY, res.GetWrite().GetSequence())
	assert.Equal(t, []string{"no-force-push"}, d.GetRuleRefs())

	// 4. A session rule.
	srules, err := c.PutRules(h.ctx, &permissionv1.PutRulesRequest{Scope: sessionScope(sess),
		Rules: []*eventsv1.PermissionRule{{RuleId: "no-secrets", Effect: eventsv1.RuleEffect_RULE_EFFECT_DENY, Paths: []string{"**/.env"}}}})
	require.NoError(t, err)
	w.Paths, w.MinSequence = []string{"/work/app/.env"}, srules.GetWrite().GetSequence()
	res, err = c.EvaluatePermission(h.ctx, w)
	require.NoError(t, err)
	explain(eventsv1.DecisionSource_DECISION_SOURCE_RULE, res.GetWrite().GetSequence())

	// 5. The mode: plan mode on the thread denies every change.
	pm, err := c.SetPermissionMode(h.ctx, &permissionv1.SetPermissionModeRequest{Scope: &permissionv1.PolicyScope{
		Level: eventsv1.PolicyLevel_POLICY_LEVEL_THREAD, SessionId: sess, ThreadId: thread}, Mode: eventsv1.PermissionMode_PERMISSION_MODE_PLAN})
	require.NoError(t, err)
	w.Paths, w.MinSequence = []string{"src/x.go"}, pm.GetWrite().GetSequence()
	res, err = c.EvaluatePermission(h.ctx, w)
	require.NoError(t, err)
	explain(eventsv1.DecisionSource_DECISION_SOURCE_MODE, res.GetWrite().GetSequence())

	// The state names where each setting comes from; every change was a
	// policy.changed fact.
	st, err := c.GetPermissionState(h.ctx, &permissionv1.GetPermissionStateRequest{Target: &permissionv1.Target{SessionId: sess, ThreadId: thread}})
	require.NoError(t, err)
	assert.Equal(t, eventsv1.PermissionMode_PERMISSION_MODE_PLAN, st.GetMode())
	assert.Equal(t, eventsv1.PolicyLevel_POLICY_LEVEL_THREAD, st.GetModeLevel())
	assert.Len(t, st.GetRules(), 2)
	changed := 0
	for _, v := range h.log.Views() {
		_, err = v.Read(h.ctx, []string{v.Subjects.Tenant("t1")}, eventlog.FromStart, func(r *eventlog.Record) error {
			if r.Event.GetType() == "policy.changed" {
				changed++
			}
			return nil
		})
		require.NoError(t, err)
	}
	assert.Equal(t, 5, changed)

	// A worker's sandbox stopping an access at run time is a violation too.
	rep, err := c.ReportSandboxViolation(h.ctx, &permissionv1.ReportSandboxViolationRequest{SessionId: sess, ThreadId: thread, TurnId: turn,
		ProcessId: "proc_1", Kind: eventsv1.ViolationKind_VIOLATION_KIND_NETWORK, Target: "pypi.org", Reason: "network none", Blocked: true})
	require.NoError(t, err)
	d = explain(eventsv1.DecisionSource_DECISION_SOURCE_SANDBOX, rep.GetWrite().GetSequence())
	assert.Contains(t, d.GetReason(), "pypi.org")

	// Another tenant sees none of it.
	other, err := c.GetPermissionSandboxSummary(h.as("t2"), &permissionv1.GetPermissionSandboxSummaryRequest{SessionId: sess, ThreadId: thread})
	require.NoError(t, err)
	assert.Empty(t, other.GetRecentDecisions())
	assert.Equal(t, commonv1.FactState_FACT_STATE_UNKNOWN, other.GetSandboxState())
	assert.Equal(t, commonv1.FactState_FACT_STATE_NOT_APPLICABLE, other.GetLastDenial().GetState())
}

// Spec scenario "Hook input rewrite": a pre_tool_use hook rewrites a tool's
// input or blocks it; the stream has hook.started / hook.completed with the
// updated input ref or the block reason, and the decision carries it.
func TestScenarioHookInputRewrite(t *testing.T) {
	h := newHarness(t)
	c := h.client
	var seen *permissionv1.HandleHookRequest
	target := startHookServer(t, func(_ context.Context, r *permissionv1.HandleHookRequest) (*permissionv1.HandleHookResponse, error) {
		seen = r
		if strings.Contains(r.GetToolInputJson(), "curl") {
			return &permissionv1.HandleHookResponse{Decision: eventsv1.HookOutcome_HOOK_OUTCOME_BLOCK, Reason: "no network from CI jobs"}, nil
		}
		return &permissionv1.HandleHookResponse{Decision: eventsv1.HookOutcome_HOOK_OUTCOME_CONTINUE,
			UpdatedInputJson: `{"path":"notes.txt","content":"hello\n-- reviewed"}`, AdditionalContext: []string{"notes are reviewed"}, AuditRefs: []string{"audit://1"}}, nil
	})
	_, err := c.SetSandboxProfile(h.ctx, &permissionv1.SetSandboxProfileRequest{Scope: sessionScope(sess), Profile: &eventsv1.SandboxProfile{
		Mode: eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE, Cwd: "/work", WriteRoots: []string{"/work"}}})
	require.NoError(t, err)
	reg, err := c.RegisterHook(h.ctx, &permissionv1.RegisterHookRequest{Hook: &eventsv1.Hook{HookId: "reviewer", Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE,
		Handler: &eventsv1.Hook_GrpcTarget{GrpcTarget: target}}})
	require.NoError(t, err)
	assert.Equal(t, eventsv1.HookRisk_HOOK_RISK_HIGH, reg.GetHook().GetRisk())
	list, err := c.ListHooks(h.ctx, &permissionv1.ListHooksRequest{MinSequence: reg.GetWrite().GetSequence()})
	require.NoError(t, err)
	require.Len(t, list.GetHooks(), 1)

	// Rewrite.
	w := evalReq("fs.write", eventsv1.Access_ACCESS_WRITE)
	w.Paths, w.ArgumentsJson, w.MinSequence = []string{"notes.txt"}, `{"path":"notes.txt","content":"hello","token":"s3cret"}`, reg.GetWrite().GetSequence()
	res, err := c.EvaluatePermission(h.ctx, w)
	require.NoError(t, err)
	require.NotNil(t, seen)
	assert.NotContains(t, seen.GetToolInputJson(), "s3cret", "hook input never carries secrets")
	assert.Equal(t, sess, seen.GetSessionId())
	assert.Equal(t, "call_1", seen.GetToolCallId())
	assert.Equal(t, "/work", seen.GetCwd())
	assert.Contains(t, seen.GetSandboxSummary(), "workspace_write")
	assert.Equal(t, `{"path":"notes.txt","content":"hello\n-- reviewed"}`, res.GetUpdatedArgumentsJson())
	ref := res.GetEvaluation().GetUpdatedInputRef()
	require.NotNil(t, ref)

	evs := h.history(sess)
	var hookTypes []string
	for _, e := range evs {
		if strings.HasPrefix(e.GetType(), "hook.") || e.GetType() == "permission.evaluated" {
			hookTypes = append(hookTypes, e.GetType())
		}
	}
	assert.Equal(t, []string{"hook.started", "hook.completed", "permission.evaluated"}, hookTypes)
	completed := ofType(evs, "hook.completed")[0].GetHookCompleted()
	assert.Equal(t, ref.GetUri(), completed.GetUpdatedInputRef().GetUri(), "the decision and the hook fact name the same rewrite")
	assert.Len(t, completed.GetAdditionalContextRefs(), 1)
	assert.Equal(t, []string{"audit://1"}, completed.GetAuditRefs())
	body, err := h.log.GetObject(h.ctx, ref.GetUri())
	require.NoError(t, err)
	assert.JSONEq(t, `{"path":"notes.txt","content":"hello\n-- reviewed"}`, string(body))
	sum, err := c.GetPermissionSandboxSummary(h.ctx, &permissionv1.GetPermissionSandboxSummaryRequest{SessionId: sess, ThreadId: thread, MinSequence: res.GetWrite().GetSequence()})
	require.NoError(t, err)
	assert.True(t, sum.GetRecentDecisions()[0].GetInputRewritten())
	assert.True(t, sum.GetRecentHookRuns()[0].GetInputRewritten())

	// Block.
	sh := evalReq("shell", eventsv1.Access_ACCESS_EXECUTE)
	sh.Command, sh.ArgumentsJson = "curl https://example.com", `{"command":"curl https://example.com"}`
	res, err = c.EvaluatePermission(h.ctx, sh)
	require.NoError(t, err)
	assert.Equal(t, eventsv1.Decision_DECISION_DENY, res.GetEvaluation().GetDecision())
	assert.Equal(t, eventsv1.DecisionSource_DECISION_SOURCE_HOOK, res.GetEvaluation().GetDecisionSource())
	assert.Contains(t, res.GetEvaluation().GetDecisionReason(), "no network from CI jobs")
	sum, err = c.GetPermissionSandboxSummary(h.ctx, &permissionv1.GetPermissionSandboxSummaryRequest{SessionId: sess, ThreadId: thread, MinSequence: res.GetWrite().GetSequence()})
	require.NoError(t, err)
	assert.Equal(t, eventsv1.DecisionSource_DECISION_SOURCE_HOOK, sum.GetLastDenial().GetCause())
	blocked := ofType(h.history(sess), "hook.completed")[1].GetHookCompleted()
	assert.Equal(t, eventsv1.HookOutcome_HOOK_OUTCOME_BLOCK, blocked.GetDecision())
	assert.Equal(t, "no network from CI jobs", blocked.GetReason())

	// A hook's allow does not override an ask rule.
	_, err = c.RemoveHook(h.ctx, &permissionv1.RemoveHookRequest{HookId: "reviewer"})
	require.NoError(t, err)
	_, err = c.RemoveHook(h.ctx, &permissionv1.RemoveHookRequest{HookId: "reviewer"})
	assert.Equal(t, codes.NotFound, status.Code(err))
}

// Hooks fail closed when they guard, fail open (with a warning) when they
// are read-only, time out, and may be HTTP endpoints.
func TestHookFailureModesAndHTTP(t *testing.T) {
	h := newHarness(t)
	c := h.client
	slow := startHookServer(t, func(ctx context.Context, _ *permissionv1.HandleHookRequest) (*permissionv1.HandleHookResponse, error) {
		<-ctx.Done() // answers only when the caller gives up
		return nil, ctx.Err()
	})
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := &permissionv1.HandleHookRequest{}
		var raw json.RawMessage
		_ = json.NewDecoder(r.Body).Decode(&raw)
		if err := protojson.Unmarshal(raw, in); err != nil || in.GetToolName() != "deploy" {
			http.Error(w, "bad input", http.StatusBadRequest)
			return
		}
		out, _ := protojson.Marshal(&permissionv1.HandleHookResponse{Decision: eventsv1.HookOutcome_HOOK_OUTCOME_ALLOW, Reason: "change window open"})
		_, _ = w.Write(out)
	}))
	t.Cleanup(web.Close)
	var last uint64
	for _, hk := range []*eventsv1.Hook{
		{HookId: "ctx-reader", Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE, ToolMatcher: "fs.read", Risk: eventsv1.HookRisk_HOOK_RISK_READ_ONLY,
			Handler: &eventsv1.Hook_GrpcTarget{GrpcTarget: slow}, Timeout: durationpb.New(200 * time.Millisecond)},
		{HookId: "guard", Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE, ToolMatcher: "db.*", Risk: eventsv1.HookRisk_HOOK_RISK_HIGH,
			Handler: &eventsv1.Hook_GrpcTarget{GrpcTarget: slow}, Timeout: durationpb.New(200 * time.Millisecond)},
		{HookId: "window", Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE, ToolMatcher: "deploy", Handler: &eventsv1.Hook_HttpUrl{HttpUrl: web.URL}},
	} {
		r, err := c.RegisterHook(h.ctx, &permissionv1.RegisterHookRequest{Hook: hk})
		require.NoError(t, err)
		last = r.GetWrite().GetSequence()
	}

	read := evalReq("fs.read", eventsv1.Access_ACCESS_READ)
	read.Paths, read.Cwd, read.MinSequence = []string{"/work/a"}, "/work", last
	res, err := c.EvaluatePermission(h.ctx, read)
	require.NoError(t, err)
	assert.Equal(t, eventsv1.Decision_DECISION_ALLOW, res.GetEvaluation().GetDecision(), "a read-only hook fails open")
	failed := ofType(h.history(sess), "hook.failed")
	require.Len(t, failed, 1)
	f := failed[0].GetHookFailed()
	assert.Equal(t, eventsv1.HookFailureCategory_HOOK_FAILURE_CATEGORY_TIMEOUT, f.GetCategory())
	assert.Equal(t, eventsv1.FailMode_FAIL_MODE_OPEN, f.GetFailMode())
	assert.True(t, f.GetRetryable())
	assert.NotEmpty(t, f.GetWarning(), "fail-open carries the warning control mirrors as runtime.warning")

	db := evalReq("db.migrate", eventsv1.Access_ACCESS_EXECUTE)
	res, err = c.EvaluatePermission(h.ctx, db)
	require.NoError(t, err)
	assert.Equal(t, eventsv1.Decision_DECISION_UNAVAILABLE, res.GetEvaluation().GetDecision(), "a high-risk hook fails closed")
	assert.Equal(t, eventsv1.FailMode_FAIL_MODE_CLOSED, ofType(h.history(sess), "hook.failed")[1].GetHookFailed().GetFailMode())

	deploy := evalReq("deploy", eventsv1.Access_ACCESS_EXECUTE)
	res, err = c.EvaluatePermission(h.ctx, deploy)
	require.NoError(t, err)
	assert.Equal(t, eventsv1.DecisionSource_DECISION_SOURCE_HOOK, res.GetEvaluation().GetDecisionSource())
	assert.Contains(t, []eventsv1.Decision{eventsv1.Decision_DECISION_ALLOW, eventsv1.Decision_DECISION_SANDBOXED}, res.GetEvaluation().GetDecision())

	// RunHooks runs a point on its own and says what the hooks decided.
	run, err := c.RunHooks(h.ctx, &permissionv1.RunHooksRequest{Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE, SessionId: sess, ThreadId: thread, TurnId: turn, ToolName: "deploy"})
	require.NoError(t, err)
	assert.Equal(t, eventsv1.HookOutcome_HOOK_OUTCOME_ALLOW, run.GetDecision())

	// Bad input names the field.
	_, err = c.RegisterHook(h.ctx, &permissionv1.RegisterHookRequest{Hook: &eventsv1.Hook{Point: eventsv1.HookPoint_HOOK_POINT_STOP,
		Handler: &eventsv1.Hook_HttpUrl{HttpUrl: "ftp://x"}}})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Contains(t, err.Error(), "hook.http_url")
	_, err = c.RegisterHook(h.ctx, &permissionv1.RegisterHookRequest{Hook: &eventsv1.Hook{HookId: "window", Point: eventsv1.HookPoint_HOOK_POINT_STOP,
		Handler: &eventsv1.Hook_HttpUrl{HttpUrl: web.URL}}})
	assert.Equal(t, codes.AlreadyExists, status.Code(err))
}

// The tool path of spec scenario "Approval gate": evaluate -> ask ->
// permission.requested with a new action id -> (control) action.required
// and action.resolved -> permission.resolved, and "for this session"
// becomes a session rule. Control's RespondAction is built concurrently,
// so the test appends the two action facts as the control service would.
func TestScenarioApprovalGateToolPath(t *testing.T) {
	h := newHarness(t)
	c := h.client
	_, err := c.SetSandboxProfile(h.ctx, &permissionv1.SetSandboxProfileRequest{Scope: sessionScope(sess), Profile: &eventsv1.SandboxProfile{
		Mode: eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE, Cwd: "/work", WriteRoots: []string{"/work"}}})
	require.NoError(t, err)
	m, err := c.SetPermissionMode(h.ctx, &permissionv1.SetPermissionModeRequest{Scope: sessionScope(sess), Mode: eventsv1.PermissionMode_PERMISSION_MODE_UNTRUSTED, Interactive: true})
	require.NoError(t, err)

	ask := func(command string) *permissionv1.EvaluatePermissionResponse {
		r := evalReq("shell", eventsv1.Access_ACCESS_EXECUTE)
		r.Command, r.MinSequence, r.ApprovalTimeout = command, m.GetWrite().GetSequence(), durationpb.New(time.Minute)
		res, err := c.EvaluatePermission(h.ctx, r)
		require.NoError(t, err)
		return res
	}
	res := ask("npm install left-pad")
	ev := res.GetEvaluation()
	require.Equal(t, eventsv1.Decision_DECISION_ASK, ev.GetDecision())
	actionID := ev.GetApprovalActionId()
	require.True(t, strings.HasPrefix(actionID, ids.PermissionAction+"_"), actionID)
	require.True(t, ids.Reserved(actionID))

	req := h.waitEvent(sess, func(e *eventsv1.RuntimeEvent) bool { return e.GetType() == "permission.requested" })
	assert.Equal(t, actionID, req.GetActionId())
	assert.Equal(t, []string{sess, thread, turn, "step_1", "call_1"}, []string{req.GetSessionId(), req.GetThreadId(), req.GetTurnId(), req.GetStepId(), req.GetToolCallId()})
	pr := req.GetPermissionRequested()
	assert.Equal(t, []string{"allow_once", "allow_session", "deny"}, pr.GetDecisions())
	assert.Equal(t, "deny", pr.GetDecisionOnTimeout())
	assert.Equal(t, time.Minute, pr.GetTimeout().AsDuration())
	assert.Equal(t, "shell", pr.GetName())
	assert.NotEmpty(t, pr.GetPrompt())

	sum, err := c.GetPermissionSandboxSummary(h.ctx, &permissionv1.GetPermissionSandboxSummaryRequest{SessionId: sess, ThreadId: thread, MinSequence: res.GetWrite().GetSequence()})
	require.NoError(t, err)
	require.Len(t, sum.GetPendingApprovals(), 1)
	assert.Equal(t, actionID, sum.GetPendingApprovals()[0].GetActionId())

	// What the control service does: project the request into an action,
	// then resolve it when a human responds.
	respondAs := func(requestedBy, onTurn, responder, action string, outcome eventsv1.ActionOutcome, decision string) {
		agg := eventlog.Aggregate{Tenant: "t1", Session: sess, Kind: "action", ID: action + "-" + requestedBy + "-" + onTurn}
		_, err := h.log.Append(h.ctx, agg, eventlog.Any,
			&eventsv1.RuntimeEvent{Type: "action.required", ThreadId: thread, TurnId: onTurn, ActionId: action, ToolCallId: "call_1",
				Payload: &eventsv1.RuntimeEvent_ActionRequired{ActionRequired: &eventsv1.ActionRequired{ActionType: "permission", Prompt: pr.GetPrompt(),
					Decisions: pr.GetDecisions(), Timeout: pr.GetTimeout(), DecisionOnTimeout: pr.GetDecisionOnTimeout(), RequestedBy: requestedBy}}},
			&eventsv1.RuntimeEvent{Type: "action.resolved", ThreadId: thread, TurnId: onTurn, ActionId: action,
				Payload: &eventsv1.RuntimeEvent_ActionResolved{ActionResolved: &eventsv1.ActionResolved{Outcome: outcome, Decision: decision,
					Responder: responder, ActionType: "permission", RequestedBy: requestedBy}}})
		require.NoError(t, err)
	}
	respond := func(action string, outcome eventsv1.ActionOutcome, decision string) {
		respondAs("permission", turn, "alice", action, outcome, decision)
	}
	// An action that carries the request's id but that the runtime did not
	// open (a caller's, or one on another turn) answers nothing: the first
	// permission.resolved below is alice's, on the runtime's action.
	respondAs("worker-w1", turn, "mallory", actionID, eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED, "allow_once")
	respondAs("permission", "turn_other", "mallory", actionID, eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED, "allow_once")
	respond(actionID, eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED, "allow_session")
	resolved := h.waitEvent(sess, func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "permission.resolved" && e.GetActionId() == actionID
	})
	r := resolved.GetPermissionResolved()
	assert.Equal(t, eventsv1.PermissionResolution_PERMISSION_RESOLUTION_ALLOWED, r.GetResolution())
	assert.True(t, r.GetAllowed())
	assert.Equal(t, "alice", r.GetResponder())
	assert.Equal(t, "session-"+actionID, r.GetSessionRuleId())
	rule := h.waitEvent(sess, func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "policy.changed" && e.GetPolicyChanged().GetSessionRuleAdded() != nil
	})
	assert.Equal(t, []string{"npm install"}, rule.GetPolicyChanged().GetSessionRuleAdded().GetRule().GetCommands())
	h.waitEvent(sess, func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "sandbox.applied" && e.GetActionId() == actionID
	})

	// The same call again is allowed by the session rule, with no human.
	again := ask("npm install left-pad")
	assert.Equal(t, eventsv1.Decision_DECISION_ALLOW, again.GetEvaluation().GetDecision(), again.GetEvaluation().GetDecisionReason())
	assert.Equal(t, "session", again.GetEvaluation().GetScope())
	assert.Equal(t, []string{"session-" + actionID}, again.GetEvaluation().GetRuleRefs())

	// A request nobody answers times out as a deny, and the read model
	// says a human (the missing answer) caused it; a redelivered answer
	// changes nothing.
	second := ask("pip install requests").GetEvaluation().GetApprovalActionId()
	respond(second, eventsv1.ActionOutcome_ACTION_OUTCOME_TIMED_OUT, "deny")
	respond(actionID, eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED, "allow_session")
	third := ask("cargo build").GetEvaluation().GetApprovalActionId()
	respond(third, eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED, "")
	last := h.waitEvent(sess, func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "permission.resolved" && e.GetActionId() == third
	})
	assert.Equal(t, eventsv1.PermissionResolution_PERMISSION_RESOLUTION_CANCELLED, last.GetPermissionResolved().GetResolution())
	counts := map[string]int{}
	for _, e := range ofType(h.history(sess), "permission.resolved") {
		counts[e.GetActionId()]++
		if e.GetActionId() == second {
			assert.Equal(t, eventsv1.PermissionResolution_PERMISSION_RESOLUTION_TIMED_OUT, e.GetPermissionResolved().GetResolution())
		}
	}
	assert.Equal(t, map[string]int{actionID: 1, second: 1, third: 1}, counts, "each request resolves exactly once")
	assert.Len(t, ofType(h.history(sess), "policy.changed"), 1+2, "one session rule (plus the profile and mode)")

	sum, err = c.GetPermissionSandboxSummary(h.ctx, &permissionv1.GetPermissionSandboxSummaryRequest{SessionId: sess, ThreadId: thread, MinSequence: last.GetSequence()})
	require.NoError(t, err)
	assert.Empty(t, sum.GetPendingApprovals())
	assert.Equal(t, eventsv1.DecisionSource_DECISION_SOURCE_HUMAN, sum.GetLastDenial().GetCause())
	for _, d := range sum.GetRecentDecisions() {
		if d.GetApprovalActionId() == actionID {
			assert.Equal(t, eventsv1.PermissionResolution_PERMISSION_RESOLUTION_ALLOWED, d.GetResolution())
		}
	}

	// ResolvePermission: a second, different answer is refused; another
	// tenant cannot see the request at all.
	_, err = c.ResolvePermission(h.ctx, &permissionv1.ResolvePermissionRequest{SessionId: sess, ActionId: second, Decision: "allow_once"})
	assert.Equal(t, codes.FailedPrecondition, status.Code(err))
	_, err = c.ResolvePermission(h.as("t2"), &permissionv1.ResolvePermissionRequest{SessionId: sess, ActionId: actionID, Decision: "deny"})
	assert.Equal(t, codes.NotFound, status.Code(err))
	_, err = c.ResolvePermission(h.ctx, &permissionv1.ResolvePermissionRequest{SessionId: sess, ActionId: actionID, Decision: "maybe"})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
}

func TestExecutionEnvironmentPerTurn(t *testing.T) {
	h := newHarness(t)
	c := h.client
	_, err := c.SetSandboxProfile(h.ctx, &permissionv1.SetSandboxProfileRequest{Scope: sessionScope(sess), Profile: &eventsv1.SandboxProfile{
		Mode: eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE, Cwd: "/work", WriteRoots: []string{"/work"}, Network: eventsv1.NetworkMode_NETWORK_MODE_ALLOWLIST,
		AllowedHosts: []string{"github.com"}, EnvironmentRef: "env://default", ProcessLimits: &eventsv1.ProcessLimits{MaxProcesses: 32}}})
	require.NoError(t, err)
	rep, err := c.ReportExecutionEnvironment(h.ctx, &permissionv1.ReportExecutionEnvironmentRequest{SessionId: sess, ThreadId: thread, TurnId: turn,
		WorkspaceId: "ws_1", Cwd: "sub", AdditionalRoots: []string{"/data"}, Shell: "bash", Os: "linux", Arch: "amd64"})
	require.NoError(t, err)
	got, err := c.GetExecutionEnvironment(h.ctx, &permissionv1.GetExecutionEnvironmentRequest{SessionId: sess, TurnId: turn, MinSequence: rep.GetWrite().GetSequence()})
	require.NoError(t, err)
	env := got.GetEnvironment()
	assert.Equal(t, "/work/sub", env.GetCwd())
	assert.Equal(t, []string{"/data"}, env.GetAdditionalRoots())
	assert.Equal(t, "env://default", env.GetEnvRef())
	assert.Equal(t, eventsv1.NetworkMode_NETWORK_MODE_ALLOWLIST, env.GetNetwork())
	assert.Equal(t, uint32(32), env.GetResourceLimits().GetMaxProcesses())
	assert.Equal(t, "bash", env.GetShell())
	assert.Equal(t, thread, got.GetThreadId())
	_, err = c.GetExecutionEnvironment(h.as("t2"), &permissionv1.GetExecutionEnvironmentRequest{SessionId: sess, TurnId: turn})
	assert.Equal(t, codes.NotFound, status.Code(err))
	_, err = c.ReportExecutionEnvironment(h.ctx, &permissionv1.ReportExecutionEnvironmentRequest{SessionId: sess, ThreadId: thread, TurnId: turn, AdditionalRoots: []string{"rel"}})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	// Validation happens before the handler: a bad id names its field.
	_, err = c.EvaluatePermission(h.ctx, &permissionv1.EvaluatePermissionRequest{SessionId: "bad.id", ThreadId: thread, TurnId: turn, Target: eventsv1.TargetKind_TARGET_KIND_TOOL, Name: "x", Access: eventsv1.Access_ACCESS_READ})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Contains(t, err.Error(), "session_id")
}
