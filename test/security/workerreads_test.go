package security

import (
	"context"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit/binproc"
)

// A worker key of tenant acme, holding the claimed turn of session s1,
// tries to read session s2's task and permission state through the real
// binary: the tasks and permission services refuse it PermissionDenied
// SESSION_NOT_HELD and answer nothing, as they refuse its read of the
// tenant's permission state. It then submits a turn to s2, once plainly
// and once naming a task run it does not hold, to be handed a hold of s2:
// s2's task and events stay closed to it. What it holds (s1) it reads,
// and the operator reads s2.
func TestAWorkerCannotReadTheTasksAndPermissionsOfSessionsItDoesNotHold(t *testing.T) {
	dev := binproc.Start(t, bin, nil, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--console=false", "--auth", authFile(t))
	conn, err := grpc.NewClient(dev.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	base, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	as := func(key string) context.Context {
		return metadata.AppendToOutgoingContext(base, "authorization", "Bearer "+key)
	}
	operator, worker := as(acmeOperator), as(acmeWorker)
	control, tasks, permission := controlv1.NewControlServiceClient(conn), tasksv1.NewTasksServiceClient(conn), permissionv1.NewPermissionServiceClient(conn)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"s1", "s2"} {
		_, err := control.SubmitTurn(operator, &controlv1.SubmitTurnRequest{SessionId: s, ThreadId: "th-" + s, Input: text("work in " + s)})
		must(err)
		_, err = tasks.CreateTask(operator, &tasksv1.CreateTaskRequest{TaskId: "task-" + s, SessionId: s, ThreadId: "th-" + s,
			Spec: &tasksv1.TaskSpec{Title: "secret plan of " + s}})
		must(err)
	}
	claim, err := control.ClaimTurn(worker, &controlv1.ClaimTurnRequest{WorkerId: "w1", SessionId: "s1", Wait: durationpb.New(20 * time.Second)})
	must(err)
	if claim.GetTurn().GetSessionId() != "s1" {
		t.Fatalf("claimed %v, want the turn of s1", claim.GetTurn())
	}

	refused := func(what string, resp any, err error, nothing bool) {
		t.Helper()
		st := status.Convert(err)
		if st.Code() != codes.PermissionDenied || !nothing {
			t.Fatalf("%s: %v (answer %v), want PermissionDenied and nothing read", what, err, resp)
		}
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == "SESSION_NOT_HELD" {
				return
			}
		}
		t.Fatalf("%s: %v, want ErrorInfo SESSION_NOT_HELD", what, st.Details())
	}
	s2 := &permissionv1.Target{SessionId: "s2", ThreadId: "th-s2"}
	attack := func(when string) {
		t.Helper()
		task, err := tasks.GetTask(worker, &tasksv1.GetTaskRequest{TaskId: "task-s2"})
		refused(when+": the worker's GetTask of s2's task", task, err, task == nil)
		state, err := permission.GetPermissionState(worker, &permissionv1.GetPermissionStateRequest{Target: s2})
		refused(when+": the worker's GetPermissionState of s2", state, err, state == nil)
		profile, err := permission.GetSandboxProfile(worker, &permissionv1.GetSandboxProfileRequest{Target: s2})
		refused(when+": the worker's GetSandboxProfile of s2", profile, err, profile == nil)
	}
	attack("holding s1")
	tenant, err := permission.GetPermissionState(worker, &permissionv1.GetPermissionStateRequest{Target: &permissionv1.Target{}})
	refused("the worker's GetPermissionState of the whole tenant", tenant, err, tenant == nil)

	// A submit is no way in: neither a plain one nor one naming a task run
	// the worker does not hold.
	_, err = control.SubmitTurn(worker, &controlv1.SubmitTurnRequest{SessionId: "s2", ThreadId: "th-s2", Input: text("let me in")})
	must(err)
	_, err = control.SubmitTurn(worker, &controlv1.SubmitTurnRequest{SessionId: "s2", ThreadId: "th-s2", Input: text("let me in"),
		Metadata: map[string]string{"task_id": "task-s2", "task_run_id": "run_not_mine"}})
	must(err)
	attack("after submitting to s2")
	stream, err := control.SubscribeEvents(worker, &controlv1.SubscribeEventsRequest{SessionId: "s2", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	var m *controlv1.SubscribeEventsResponse
	if err == nil {
		m, err = stream.Recv()
	}
	refused("the worker following s2 after submitting to it", m, err, m == nil)

	// What it holds it reads; the operator reads s2.
	if got, err := tasks.GetTask(worker, &tasksv1.GetTaskRequest{TaskId: "task-s1"}); err != nil || got.GetTask().GetSpec().GetTitle() != "secret plan of s1" {
		t.Fatalf("the worker's GetTask of s1's task: %v, %v", got, err)
	}
	if _, err := permission.GetPermissionState(worker, &permissionv1.GetPermissionStateRequest{Target: &permissionv1.Target{SessionId: "s1"}}); err != nil {
		t.Fatalf("the worker's GetPermissionState of s1: %v", err)
	}
	if got, err := tasks.GetTask(operator, &tasksv1.GetTaskRequest{TaskId: "task-s2"}); err != nil || got.GetTask().GetSpec().GetTitle() != "secret plan of s2" {
		t.Fatalf("the operator's GetTask of s2's task: %v, %v", got, err)
	}
}
