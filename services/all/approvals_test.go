package all_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
)

const (
	operatorKey = "k-acme-operator-0123456789"
	workerKey   = "k-acme-worker-0123456789"
)

// A worker asks to run a dangerous command (EvaluatePermission answers
// ASK with the approval action's id) and tries to open that action itself
// first, with a harmless-looking prompt, so that the operator's approval
// of its prompt allows the command. The id is reserved (RequestAction
// refuses it, naming action_id); the action the operator sees under it is
// the runtime's, whose prompt names the command; approving an action the
// worker opened under an id of its own resolves no permission request.
// After the operator approved the worker's action and denied the
// runtime's, the log holds no permission.resolved allowing the dangerous
// evaluation. The runtime's own action, approved, still allows.
func TestAWorkerCannotWriteThePromptAPersonApproves(t *testing.T) {
	sys := startSystemWithKeys(t, pinnedModels, 1,
		auth.APIKeyConfig{Name: "alice", Tenant: "acme", Role: "admin", Key: pinnedKey},
		auth.APIKeyConfig{Name: "olive", Tenant: "acme", Role: "operator", Key: operatorKey},
		auth.APIKeyConfig{Name: "w1", Tenant: "acme", Role: "worker", Key: workerKey})
	c := sys.clients
	base, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	as := func(key string) context.Context {
		return metadata.AppendToOutgoingContext(base, "authorization", "Bearer "+key)
	}
	admin, operator, worker := as(pinnedKey), as(operatorKey), as(workerKey)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	sub, err := c.control.SubmitTurn(operator, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1",
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "tidy up"}}}})
	must(err)
	turn := sub.GetTurn().GetTurnId()
	mode, err := c.permission.SetPermissionMode(admin, &permissionv1.SetPermissionModeRequest{
		Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_SESSION, SessionId: "s1"},
		Mode:  eventsv1.PermissionMode_PERMISSION_MODE_UNTRUSTED, Interactive: true})
	must(err)
	ask := func(command, call string) *eventsv1.PermissionEvaluated {
		t.Helper()
		res, err := c.permission.EvaluatePermission(worker, &permissionv1.EvaluatePermissionRequest{SessionId: "s1", ThreadId: "th1", TurnId: turn,
			StepId: "step_1", ToolCallId: call, Target: eventsv1.TargetKind_TARGET_KIND_TOOL, Name: "shell", Access: eventsv1.Access_ACCESS_EXECUTE,
			Command: command, MinSequence: mode.GetWrite().GetSequence(), ApprovalTimeout: durationpb.New(time.Minute)})
		must(err)
		if res.GetEvaluation().GetDecision() != eventsv1.Decision_DECISION_ASK {
			t.Fatalf("%q: %v, want ask", command, res.GetEvaluation())
		}
		return res.GetEvaluation()
	}
	// next waits, following the session's log, for the first event after
	// those already seen that matches.
	follow, err := sys.log.Subscribe(base, []string{sys.log.Subjects.Session("acme", "s1")}, eventlog.FromStart)
	must(err)
	defer follow.Stop()
	var seen []*eventsv1.RuntimeEvent
	next := func(what string, match func(*eventsv1.RuntimeEvent) bool) *eventsv1.RuntimeEvent {
		t.Helper()
		for {
			rec, err := follow.Next(base)
			if err != nil {
				t.Fatalf("waiting for %s: %v", what, err)
			}
			seen = append(seen, rec.Event)
			if match(rec.Event) {
				return rec.Event
			}
		}
	}

	danger := ask("rm -rf build/", "call_1")
	id := danger.GetApprovalActionId()
	if !ids.Reserved(id) {
		t.Fatalf("approval action id %q is not in the reserved namespace", id)
	}
	const forgedPrompt = "Allow read_file README.md?"
	// The attack: the worker opens the approval action first, with its
	// own prompt. Refused, naming action_id.
	_, err = c.control.RequestAction(worker, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: turn, ActionId: id,
		ActionType: "permission", Prompt: forgedPrompt, Decisions: []string{"allow_once", "deny"}})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !violates(st, "action_id") {
		t.Fatalf("worker's RequestAction with the approval's id: %v, want InvalidArgument on action_id", err)
	}
	// Under an id of its own the worker may ask a question, even one that
	// looks like a permission prompt.
	own, err := c.control.RequestAction(worker, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: turn, ActionId: "act_readme",
		ActionType: "permission", Prompt: forgedPrompt, Decisions: []string{"allow_once", "deny"}})
	must(err)

	// The action under the approval's id is the runtime's: its prompt
	// names the command, it is the permission reactor's, for this
	// evaluation.
	required := next("the approval action", func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "action.required" && e.GetActionId() == id
	}).GetActionRequired()
	if !strings.Contains(required.GetPrompt(), "rm -rf build/") || required.GetPrompt() == forgedPrompt ||
		required.GetRequestedBy() != "permission" || required.GetContext()["evaluation_id"] != danger.GetEvaluationId() {
		t.Fatalf("approval action %v", required)
	}

	// The operator approves the worker's prompt, and denies the runtime's.
	_, err = c.control.RespondAction(operator, &controlv1.RespondActionRequest{ActionId: own.GetAction().GetActionId(), Decision: "allow_once"})
	must(err)
	_, err = c.control.RespondAction(operator, &controlv1.RespondActionRequest{ActionId: id, Decision: "deny"})
	must(err)
	// The approval reactor answers in log order: when the deny is
	// resolved, the approval of the worker's action was handled before it.
	resolved := next("the dangerous request's resolution", func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "permission.resolved" && e.GetActionId() == id
	}).GetPermissionResolved()
	if resolved.GetAllowed() || resolved.GetResolution() != eventsv1.PermissionResolution_PERMISSION_RESOLUTION_DENIED || resolved.GetEvaluationId() != danger.GetEvaluationId() {
		t.Fatalf("dangerous request resolved as %v, want denied", resolved)
	}

	// The runtime's action, approved, still allows.
	safe := ask("npm install left-pad", "call_2")
	next("the second approval action", func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "action.required" && e.GetActionId() == safe.GetApprovalActionId()
	})
	_, err = c.control.RespondAction(operator, &controlv1.RespondActionRequest{ActionId: safe.GetApprovalActionId(), Decision: "allow_once"})
	must(err)
	allowed := next("the second request's resolution", func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "permission.resolved" && e.GetActionId() == safe.GetApprovalActionId()
	}).GetPermissionResolved()
	if !allowed.GetAllowed() || allowed.GetResponder() != "olive" || allowed.GetEvaluationId() != safe.GetEvaluationId() {
		t.Fatalf("approved request resolved as %v", allowed)
	}

	// What the log holds: no resolution allows the dangerous evaluation,
	// and none came from the worker's action.
	for _, e := range seen {
		if e.GetType() != "permission.resolved" {
			continue
		}
		if r := e.GetPermissionResolved(); r.GetEvaluationId() == danger.GetEvaluationId() && r.GetAllowed() || e.GetActionId() == own.GetAction().GetActionId() {
			t.Fatalf("recorded %v", e)
		}
	}
	if n := slices.IndexFunc(seen, func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "action.resolved" && e.GetActionId() == own.GetAction().GetActionId()
	}); n < 0 {
		t.Fatal("the operator's approval of the worker's action is not in the log")
	}
}

// violates says whether st carries a field violation on field.
func violates(st *status.Status, field string) bool {
	for _, d := range st.Details() {
		var br *errdetails.BadRequest
		if b, ok := d.(*errdetails.BadRequest); ok {
			br = b
		}
		if br == nil {
			continue
		}
		for _, v := range br.GetFieldViolations() {
			if v.GetField() == field {
				return true
			}
		}
	}
	return false
}
