package permission_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
)

var tenantLevel = &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT}

func grpcHook(id, target string) *eventsv1.Hook {
	return &eventsv1.Hook{HookId: id, Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE, ToolMatcher: "never-called",
		Handler: &eventsv1.Hook_GrpcTarget{GrpcTarget: target}}
}

// registrations counts the policy.changed facts that registered a hook
// id, in the log.
func (h *harness) registrations(id string) int {
	h.t.Helper()
	n := 0
	for _, e := range h.tenantPolicy() {
		if e.GetPolicyChanged().GetHookRegistered().GetHook().GetHookId() == id {
			n++
		}
	}
	return n
}

func (h *harness) tenantPolicy() []*eventsv1.RuntimeEvent {
	h.t.Helper()
	var out []*eventsv1.RuntimeEvent
	for _, e := range h.sessionless() {
		if e.GetType() == "policy.changed" {
			out = append(out, e)
		}
	}
	return out
}

// Concurrent registrations of one hook id with different handlers, one per
// replica, on the tenant's policy: exactly one lands each round; every
// other replica decides again on the level that one wrote and is refused
// (AlreadyExists), never appends a second registration over the first.
// Each round's winner was stale in the others' caches, so every round
// also costs them a conflict and a reload.
func TestReplicasExactlyOnePolicyWriteWinsEachRound(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d replicas", n), func(t *testing.T) {
			hs := []*harness{newHarness(t)}
			for len(hs) < n {
				hs = append(hs, hs[0].replica(true))
			}
			var last uint64
			for round := 0; round < 8; round++ {
				id := fmt.Sprintf("hook-%d", round)
				var mu sync.Mutex
				var won []int
				var wg sync.WaitGroup
				gate := make(chan struct{})
				for i, h := range hs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-gate
						resp, err := h.client.RegisterHook(h.ctx, &permissionv1.RegisterHookRequest{Hook: grpcHook(id, fmt.Sprintf("replica-%d:1", i))})
						if status.Code(err) == codes.AlreadyExists {
							return
						}
						if err != nil {
							t.Errorf("round %d replica %d: %v", round, i, err)
							return
						}
						mu.Lock()
						defer mu.Unlock()
						won = append(won, i)
						last = max(last, resp.GetWrite().GetSequence())
					}()
				}
				close(gate)
				wg.Wait()
				require.Len(t, won, 1, "round %d: registrations that landed", round)
				require.Equal(t, 1, hs[0].registrations(id), "round %d: registrations of %s in the log", round, id)
			}
			// Every replica's read model holds the eight winners.
			for i, h := range hs {
				list, err := h.client.ListHooks(h.ctx, &permissionv1.ListHooksRequest{MinSequence: last})
				require.NoError(t, err)
				assert.Len(t, list.GetHooks(), 8, "replica %d", i)
			}
		})
	}
}

// A replica whose cached policy level predates another replica's writes
// still decides on the log: removing a hook it has not seen is not
// NotFound (a refusal is confirmed on the log), registering one the other
// removed is not AlreadyExists, and a rule the other put decides its
// evaluations once its read model has the sequence the caller was given.
func TestStaleReplicaDecidesPolicyOnTheLog(t *testing.T) {
	a := newHarness(t)
	b := a.replica(true)
	_, err := b.client.RegisterHook(b.ctx, &permissionv1.RegisterHookRequest{Hook: grpcHook("h0", "b:1")})
	require.NoError(t, err)
	// b's entry of the tenant level now holds h0 only; a writes past it.
	_, err = a.client.RegisterHook(a.ctx, &permissionv1.RegisterHookRequest{Hook: grpcHook("h1", "a:1")})
	require.NoError(t, err)

	_, err = b.client.RemoveHook(b.ctx, &permissionv1.RemoveHookRequest{HookId: "h1"})
	require.NoError(t, err, "b refused to remove a hook its stale entry did not hold")
	_, err = a.client.RegisterHook(a.ctx, &permissionv1.RegisterHookRequest{Hook: grpcHook("h1", "a:2")})
	require.NoError(t, err, "a refused to register a hook b had removed")
	_, err = b.client.RegisterHook(b.ctx, &permissionv1.RegisterHookRequest{Hook: grpcHook("h1", "b:2")})
	assert.Equal(t, codes.AlreadyExists, status.Code(err), "b registered over a's h1: %v", err)

	rules, err := a.client.PutRules(a.ctx, &permissionv1.PutRulesRequest{Scope: tenantLevel,
		Rules: []*eventsv1.PermissionRule{{RuleId: "no-push", Effect: eventsv1.RuleEffect_RULE_EFFECT_DENY, Tool: "shell", Commands: []string{"git push"}}}})
	require.NoError(t, err)
	r := evalReq("shell", eventsv1.Access_ACCESS_EXECUTE)
	r.Command, r.MinSequence = "git push origin main", rules.GetWrite().GetSequence()
	res, err := b.client.EvaluatePermission(b.ctx, r)
	require.NoError(t, err)
	assert.Equal(t, eventsv1.Decision_DECISION_DENY, res.GetEvaluation().GetDecision())
	assert.Equal(t, []string{"no-push"}, res.GetEvaluation().GetRuleRefs())
}

// The command path waits for no projection: a replica whose read model
// never moves (no projector runs) changes the policy, evaluates on what
// it wrote (its writer's entries are newer than its read model), asks for
// approval and resolves the request, all from its writers and the log.
// Under the previous executor every one of these waited for the read
// model and failed Unavailable.
func TestCommandsAnswerWithoutAProjector(t *testing.T) {
	h := newHarness(t).replica(false)
	c := h.client
	_, err := c.SetSandboxProfile(h.ctx, &permissionv1.SetSandboxProfileRequest{Scope: sessionScope(sess), Profile: &eventsv1.SandboxProfile{
		Mode: eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE, Cwd: "/work", WriteRoots: []string{"/work"}}})
	require.NoError(t, err)
	_, err = c.SetPermissionMode(h.ctx, &permissionv1.SetPermissionModeRequest{Scope: sessionScope(sess), Mode: eventsv1.PermissionMode_PERMISSION_MODE_UNTRUSTED, Interactive: true})
	require.NoError(t, err)
	_, err = c.PutRules(h.ctx, &permissionv1.PutRulesRequest{Scope: tenantLevel,
		Rules: []*eventsv1.PermissionRule{{RuleId: "no-rm", Effect: eventsv1.RuleEffect_RULE_EFFECT_DENY, Tool: "shell", Commands: []string{"rm"}}}})
	require.NoError(t, err)

	r := evalReq("shell", eventsv1.Access_ACCESS_EXECUTE)
	r.Command = "rm -rf build"
	res, err := c.EvaluatePermission(h.ctx, r)
	require.NoError(t, err)
	assert.Equal(t, eventsv1.Decision_DECISION_DENY, res.GetEvaluation().GetDecision())
	assert.Equal(t, []string{"no-rm"}, res.GetEvaluation().GetRuleRefs())
	assert.Equal(t, eventsv1.PermissionMode_PERMISSION_MODE_UNTRUSTED, res.GetEvaluation().GetMode())

	r.Command = "npm install left-pad"
	res, err = c.EvaluatePermission(h.ctx, r)
	require.NoError(t, err)
	require.Equal(t, eventsv1.Decision_DECISION_ASK, res.GetEvaluation().GetDecision())
	actionID := res.GetEvaluation().GetApprovalActionId()
	resolved, err := c.ResolvePermission(h.ctx, &permissionv1.ResolvePermissionRequest{SessionId: sess, ActionId: actionID, Decision: "allow_once"})
	require.NoError(t, err)
	assert.True(t, resolved.GetResolution().GetAllowed())
	assert.Greater(t, resolved.GetWrite().GetSequence(), res.GetWrite().GetSequence())
	_, err = c.ResolvePermission(h.ctx, &permissionv1.ResolvePermissionRequest{SessionId: sess, ActionId: actionID, Decision: "deny"})
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "a second answer: %v", err)
}
