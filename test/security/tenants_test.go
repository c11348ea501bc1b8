package security

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit/binproc"
)

// The API keys of the two tenants' principals (authFile).
const (
	acmeAdmin      = "k-acme-admin"
	acmeOperator   = "k-acme-operator"
	acmeWorker     = "k-acme-worker"
	globexWorker   = "k-globex-worker"
	globexOperator = "k-globex-operator"
)

// authFile writes an auth config with the keys above.
func authFile(t *testing.T) string {
	t.Helper()
	hash := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	cfg := fmt.Sprintf(`api_keys:
  - {name: root, tenant: acme, role: admin, key_sha256: %s}
  - {name: olive, tenant: acme, role: operator, key_sha256: %s}
  - {name: bot-1, tenant: acme, role: worker, key_sha256: %s}
  - {name: gbot, tenant: globex, role: worker, key_sha256: %s}
  - {name: gus, tenant: globex, role: operator, key_sha256: %s}
`, hash(acmeAdmin), hash(acmeOperator), hash(acmeWorker), hash(globexWorker), hash(globexOperator))
	path := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runtimeWithAuth runs `agentruntime dev --auth` (one stream, no
// in-process worker: with --auth it would need a key) and answers its
// control and permission clients and a context for each key.
func runtimeWithAuth(t *testing.T) (controlv1.ControlServiceClient, permissionv1.PermissionServiceClient, func(key string) context.Context) {
	t.Helper()
	return runtimeWithAuthFile(t, authFile(t))
}

// runtimeWithAuthFile is runtimeWithAuth with an auth file of the test's
// and more flags.
func runtimeWithAuthFile(t *testing.T, path string, args ...string) (controlv1.ControlServiceClient, permissionv1.PermissionServiceClient, func(key string) context.Context) {
	t.Helper()
	dev := binproc.Start(t, bin, nil, append([]string{"dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--console=false", "--auth", path}, args...)...)
	conn, err := grpc.NewClient(dev.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	as := func(key string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
	}
	return controlv1.NewControlServiceClient(conn), permissionv1.NewPermissionServiceClient(conn), as
}

// follow subscribes to a session's story from its start; next waits for
// the first event after those seen that matches, and seen is everything
// delivered so far.
type follow struct {
	t      *testing.T
	stream grpc.ServerStreamingClient[controlv1.SubscribeEventsResponse]
	seen   []*eventsv1.RuntimeEvent
}

func (f *follow) next(what string, match func(*eventsv1.RuntimeEvent) bool) *eventsv1.RuntimeEvent {
	f.t.Helper()
	for {
		m, err := f.stream.Recv()
		if err != nil {
			f.t.Fatalf("waiting for %s: %v", what, err)
		}
		if ev := m.GetEvent(); ev != nil {
			f.seen = append(f.seen, ev)
			if match(ev) {
				return ev
			}
		}
	}
}

func text(s string) []*eventsv1.InputPart {
	return []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: s}}}
}

// A worker asks to run `rm -rf build/` and, through the real binary with
// roles on, tries to put its own prompt on the action the operator will
// approve: it opens that action first, under the id EvaluatePermission
// answered, with "Allow read_file README.md?". Refused (InvalidArgument on
// action_id). The action under the id is the runtime's and names the
// command. The worker's look-alike action under an id of its own, which
// the operator approves, resolves nothing: with the runtime's action
// denied, the log holds no permission.resolved allowing the command. A
// runtime action the operator approves still allows.
func TestAWorkerCannotPutItsPromptOnAnApproval(t *testing.T) {
	control, permission, as := runtimeWithAuth(t)
	admin, operator, worker := as(acmeAdmin), as(acmeOperator), as(acmeWorker)
	sub, err := control.SubmitTurn(operator, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text("tidy up")})
	if err != nil {
		t.Fatal(err)
	}
	turn := sub.GetTurn().GetTurnId()
	mode, err := permission.SetPermissionMode(admin, &permissionv1.SetPermissionModeRequest{
		Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_SESSION, SessionId: "s1"},
		Mode:  eventsv1.PermissionMode_PERMISSION_MODE_UNTRUSTED, Interactive: true})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := control.SubscribeEvents(operator, &controlv1.SubscribeEventsRequest{SessionId: "s1", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	if err != nil {
		t.Fatal(err)
	}
	log := &follow{t: t, stream: stream}
	ask := func(command, call string) *eventsv1.PermissionEvaluated {
		t.Helper()
		res, err := permission.EvaluatePermission(worker, &permissionv1.EvaluatePermissionRequest{SessionId: "s1", ThreadId: "th1", TurnId: turn,
			StepId: "step_1", ToolCallId: call, Target: eventsv1.TargetKind_TARGET_KIND_TOOL, Name: "shell", Access: eventsv1.Access_ACCESS_EXECUTE,
			Command: command, MinSequence: mode.GetWrite().GetSequence(), ApprovalTimeout: durationpb.New(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		if res.GetEvaluation().GetDecision() != eventsv1.Decision_DECISION_ASK {
			t.Fatalf("%q: %v, want ask", command, res.GetEvaluation())
		}
		return res.GetEvaluation()
	}

	danger := ask("rm -rf build/", "call_1")
	id := danger.GetApprovalActionId()
	const forged = "Allow read_file README.md?"
	_, err = control.RequestAction(worker, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: turn, ActionId: id,
		ActionType: "permission", Prompt: forged, Decisions: []string{"allow_once", "deny"}})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !namesField(st, "action_id") {
		t.Fatalf("the worker's RequestAction under the approval's id %s: %v, want InvalidArgument on action_id", id, err)
	}
	own, err := control.RequestAction(worker, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: turn, ActionId: "act_readme",
		ActionType: "permission", Prompt: forged, Decisions: []string{"allow_once", "deny"}})
	if err != nil {
		t.Fatal(err)
	}
	required := log.next("the approval action", func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "action.required" && e.GetActionId() == id
	}).GetActionRequired()
	if !strings.Contains(required.GetPrompt(), "rm -rf build/") || required.GetRequestedBy() != "permission" ||
		required.GetContext()["evaluation_id"] != danger.GetEvaluationId() {
		t.Fatalf("the approval action is not the runtime's: %v", required)
	}

	if _, err := control.RespondAction(operator, &controlv1.RespondActionRequest{ActionId: own.GetAction().GetActionId(), Decision: "allow_once"}); err != nil {
		t.Fatal(err)
	}
	if _, err := control.RespondAction(operator, &controlv1.RespondActionRequest{ActionId: id, Decision: "deny"}); err != nil {
		t.Fatal(err)
	}
	// Answers are applied in log order: the worker's action was handled
	// before the runtime's was resolved.
	res := log.next("the dangerous request's resolution", func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "permission.resolved" && e.GetActionId() == id
	}).GetPermissionResolved()
	if res.GetAllowed() || res.GetResolution() != eventsv1.PermissionResolution_PERMISSION_RESOLUTION_DENIED {
		t.Fatalf("the dangerous request resolved as %v, want denied", res)
	}

	safe := ask("npm install left-pad", "call_2")
	log.next("the second approval action", func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "action.required" && e.GetActionId() == safe.GetApprovalActionId()
	})
	if _, err := control.RespondAction(operator, &controlv1.RespondActionRequest{ActionId: safe.GetApprovalActionId(), Decision: "allow_once"}); err != nil {
		t.Fatal(err)
	}
	if r := log.next("the second request's resolution", func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "permission.resolved" && e.GetActionId() == safe.GetApprovalActionId()
	}).GetPermissionResolved(); !r.GetAllowed() || r.GetResponder() != "olive" {
		t.Fatalf("the approved request resolved as %v", r)
	}

	for _, e := range log.seen {
		if e.GetType() != "permission.resolved" {
			continue
		}
		if r := e.GetPermissionResolved(); r.GetEvaluationId() == danger.GetEvaluationId() && r.GetAllowed() || e.GetActionId() == own.GetAction().GetActionId() {
			t.Fatalf("the log records %v", e)
		}
	}
	if !slices.ContainsFunc(log.seen, func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "action.resolved" && e.GetActionId() == own.GetAction().GetActionId()
	}) {
		t.Fatal("the operator's approval of the worker's action is not in the log")
	}
}

// Tenant globex's worker, through the real binary, reports facts carrying
// the event ids acme's next SubmitTurn will derive (command.DeriveID of
// acme's thread and the submit's key, by idempotency key and by turn id;
// the log is one stream, so the two tenants share its de-duplication
// window). acme's submits still land: new turns, on acme's thread, readable.
func TestAnotherTenantCannotSwallowASubmit(t *testing.T) {
	control, _, as := runtimeWithAuth(t)
	operator, gWorker, gOperator := as(acmeOperator), as(globexWorker), as(globexOperator)
	if _, err := control.SubmitTurn(operator, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text("first")}); err != nil {
		t.Fatal(err)
	}
	mine, err := control.SubmitTurn(gOperator, &controlv1.SubmitTurnRequest{SessionId: "s9", ThreadId: "th9", Input: text("cover")})
	if err != nil {
		t.Fatal(err)
	}
	turn := mine.GetTurn().GetTurnId()
	thread := eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "thread", ID: "th1"}
	if _, err := control.ReportEvents(gWorker, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{{Type: "turn.started", TurnId: turn,
		Payload: &eventsv1.RuntimeEvent_TurnStarted{TurnStarted: &eventsv1.TurnStarted{WorkerId: "gw"}}}}}); err != nil {
		t.Fatal(err)
	}
	var forged []*eventsv1.RuntimeEvent
	for _, key := range []string{"submit:key:next", "submit:turn:turn_next"} {
		for n := range 4 {
			forged = append(forged, &eventsv1.RuntimeEvent{Type: "model.delta", TurnId: turn, EventId: command.DeriveID(thread, key, n),
				Payload: &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: "x"}}})
		}
	}
	rep, err := control.ReportEvents(gWorker, &controlv1.ReportEventsRequest{Events: forged})
	if err != nil {
		t.Fatalf("globex's report: %v", err)
	}
	// Its retried report is still a retry.
	if again, err := control.ReportEvents(gWorker, &controlv1.ReportEventsRequest{Events: forged}); err != nil || again.GetSequence() != rep.GetSequence() {
		t.Fatalf("globex's retried report = %v, %v; want sequence %d again", again, err, rep.GetSequence())
	}

	byKey, err := control.SubmitTurn(operator, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text("next"), IdempotencyKey: "next"})
	if err != nil {
		t.Fatalf("acme's SubmitTurn by idempotency key: %v", err)
	}
	byID, err := control.SubmitTurn(operator, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text("next"), TurnId: "turn_next"})
	if err != nil {
		t.Fatalf("acme's SubmitTurn by turn id: %v", err)
	}
	if byKey.GetDeduplicated() || byID.GetDeduplicated() {
		t.Fatalf("acme's submits were taken for retries: %v, %v", byKey, byID)
	}
	read, err := control.GetThreadRead(operator, &controlv1.GetThreadReadRequest{SessionId: "s1", ThreadId: "th1", MinSequence: byID.GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	th := read.GetThread()
	for _, id := range []string{byKey.GetTurn().GetTurnId(), byID.GetTurn().GetTurnId()} {
		if th.GetActiveTurnId() != id && !slices.Contains(th.GetQueuedTurnIds(), id) {
			t.Fatalf("acme's turn %s is not on its thread: %v", id, th)
		}
	}
}

// namesField says whether st carries a field violation on field.
func namesField(st *status.Status, field string) bool {
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				if v.GetField() == field {
					return true
				}
			}
		}
	}
	return false
}
