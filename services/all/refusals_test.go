package all_test

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/enums"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// Every refusal in a thread is explained in its read model with its
// structured cause, not only the last: two calls a rule denies and one a
// person denies, through the permission service and the control service
// as they run together.
func TestEveryRefusalInAThreadIsExplained(t *testing.T) {
	c := startAll(t)
	ctx := metadata.AppendToOutgoingContext(testkit.Context(t), "authorization", "Bearer "+pinnedKey)
	ok := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sub, err := c.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1",
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "ship it"}}}})
	if err != nil {
		t.Fatal(err)
	}
	turn := sub.GetTurn().GetTurnId()
	rules, err := c.permission.PutRules(ctx, &permissionv1.PutRulesRequest{Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT},
		Rules: []*eventsv1.PermissionRule{{RuleId: "no-force-push", Effect: eventsv1.RuleEffect_RULE_EFFECT_DENY, Tool: "shell", Commands: []string{"git push"}}}})
	if err != nil {
		t.Fatal(err)
	}
	mode, err := c.permission.SetPermissionMode(ctx, &permissionv1.SetPermissionModeRequest{
		Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_SESSION, SessionId: "s1"},
		Mode:  eventsv1.PermissionMode_PERMISSION_MODE_UNTRUSTED, Interactive: true})
	if err != nil {
		t.Fatal(err)
	}
	min := max(rules.GetWrite().GetSequence(), mode.GetWrite().GetSequence())
	evaluate := func(command, call string) *eventsv1.PermissionEvaluated {
		t.Helper()
		res, err := c.permission.EvaluatePermission(ctx, &permissionv1.EvaluatePermissionRequest{SessionId: "s1", ThreadId: "th1", TurnId: turn,
			StepId: "step_1", ToolCallId: call, Target: eventsv1.TargetKind_TARGET_KIND_TOOL, Name: "shell", Access: eventsv1.Access_ACCESS_EXECUTE,
			Command: command, MinSequence: min, ApprovalTimeout: durationpb.New(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		return res.GetEvaluation()
	}
	first := evaluate("git push --force origin main", "call_1")
	second := evaluate("git push origin v1", "call_2")
	asked := evaluate("rm -rf build/", "call_3")
	for _, e := range []*eventsv1.PermissionEvaluated{first, second} {
		if e.GetDecision() != eventsv1.Decision_DECISION_DENY {
			t.Fatalf("%v, want deny by the rule", e)
		}
	}
	if asked.GetDecision() != eventsv1.Decision_DECISION_ASK {
		t.Fatalf("%v, want ask", asked)
	}
	action := asked.GetApprovalActionId()
	// The control service opens the approval as an action from
	// permission.requested; until it has, the action is not found.
	testkit.Eventually(t, "the approval answered", func() bool {
		_, err := c.control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: action, Decision: "deny"})
		if status.Code(err) == codes.NotFound {
			return false
		}
		ok(nil, err)
		return true
	})

	var th *controlv1.ThreadRead
	testkit.Eventually(t, "four refusals in the thread", func() bool {
		r, err := c.control.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: "s1", ThreadId: "th1"})
		if err != nil {
			t.Fatal(err)
		}
		th = r.GetThread()
		return len(th.GetRefusals()) == 4
	})
	got := th.GetRefusals()
	// The asked call's path cannot be checked against the sandbox: a
	// blocked violation, explained as such, before the person's denial.
	for i, want := range []struct{ cause, call, evaluation string }{
		{enums.Word(first.GetDecisionSource()), "call_1", first.GetEvaluationId()},
		{enums.Word(second.GetDecisionSource()), "call_2", second.GetEvaluationId()},
		{"sandbox_violation", "call_3", asked.GetEvaluationId()},
		{"human", "", ""},
	} {
		r := got[i]
		if r.GetCause() != want.cause || (want.call != "" && r.GetToolCallId() != want.call) || r.GetEvaluationId() != want.evaluation || r.GetTurnId() != turn {
			t.Errorf("refusal %d: %v, want cause %s, call %s, evaluation %s", i, r, want.cause, want.call, want.evaluation)
		}
	}
	for _, r := range got[:2] {
		if !slices.Contains(r.GetRuleRefs(), "no-force-push") || r.GetTool() != "shell" || r.GetCommand() == "" {
			t.Errorf("a rule's refusal without its rule, tool or command: %v", r)
		}
	}
	if got[3].GetActionId() != action {
		t.Errorf("the person's refusal names action %q, want %q", got[3].GetActionId(), action)
	}
	// The last one is also in the permission summary's facts, as before.
	if f := th.GetPermission().GetFacts(); f["refusal_cause"] != "human" || f["refusal_action_id"] != action {
		t.Errorf("permission facts: %v", f)
	}
}
