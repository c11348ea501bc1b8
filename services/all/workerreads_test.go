package all_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/auth"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/worker"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
	"github.com/agentruntime/agentruntime/services/all/alltest"
)

const workerBKey = "k-acme-worker-b-0123456789"

// Workers read only the sessions they hold (docs/security.md): worker A
// claims the turn of session s1, worker B the turn of s2, and nobody the
// turn of s3. A reads and follows s1 (its thread, its session, its
// attempts, its outputs) and is PermissionDenied SESSION_NOT_HELD on s2
// and s3 and on a subscription across the tenant, which names session_id;
// B the other way round; the same for the session's task (tasks) and its
// permission state, sandbox profile and execution environment
// (permission), and a worker never reads the tenant's permission state. A
// worker's submit to a session holds it only for a task run the worker
// holds. The operator reads everything.
func TestWorkersReadOnlyTheSessionsTheyHold(t *testing.T) {
	sys := startSystemWithKeys(t, "", 1,
		auth.APIKeyConfig{Name: "olive", Tenant: "acme", Role: "operator", Key: operatorKey},
		auth.APIKeyConfig{Name: "wa", Tenant: "acme", Role: "worker", Key: workerKey},
		auth.APIKeyConfig{Name: "wb", Tenant: "acme", Role: "worker", Key: workerBKey})
	c := sys.clients.control
	base, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	as := func(key string) context.Context {
		return metadata.AppendToOutgoingContext(base, "authorization", "Bearer "+key)
	}
	operator, a, b := as(operatorKey), as(workerKey), as(workerBKey)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	text := []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "go"}}}
	turns := map[string]string{}
	for _, s := range []string{"s1", "s2", "s3"} {
		sub, err := c.SubmitTurn(operator, &controlv1.SubmitTurnRequest{SessionId: s, ThreadId: "th-" + s, Input: text})
		must(err)
		turns[s] = sub.GetTurn().GetTurnId()
		// A task of each session, for the tasks service's read.
		_, err = sys.clients.tasks.CreateTask(operator, &tasksv1.CreateTaskRequest{TaskId: "task-" + s, SessionId: s, ThreadId: "th-" + s,
			Spec: &tasksv1.TaskSpec{Title: "of " + s}})
		must(err)
	}
	claim := func(ctx context.Context, session string) *controlv1.ClaimTurnResponse {
		t.Helper()
		cl, err := c.ClaimTurn(ctx, &controlv1.ClaimTurnRequest{WorkerId: "w", SessionId: session, Wait: durationpb.New(10 * time.Second)})
		must(err)
		if cl.GetTurn().GetTurnId() != turns[session] {
			t.Fatalf("claim of %s: %v, want turn %s", session, cl.GetTurn(), turns[session])
		}
		return cl
	}
	claimA := claim(a, "s1")
	claim(b, "s2")
	out, err := c.StoreOutput(a, &controlv1.StoreOutputRequest{TurnId: turns["s1"], ToolCallId: "call_1", Content: []byte("s1's output")})
	must(err)
	uri := out.GetOutput().GetUri()

	// reads makes every session read the matrix opens to workers of
	// session s, and answers each one's error.
	reads := func(ctx context.Context, s string) map[string]error {
		_, getSession := c.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: s})
		_, getThread := c.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: s, ThreadId: "th-" + s})
		_, subagents := c.ListSubagents(ctx, &controlv1.ListSubagentsRequest{SessionId: s, ThreadId: "th-" + s})
		_, attempts := c.GetTurnAttempts(ctx, &controlv1.GetTurnAttemptsRequest{TurnId: turns[s]})
		_, task := sys.clients.tasks.GetTask(ctx, &tasksv1.GetTaskRequest{TaskId: "task-" + s})
		target := &permissionv1.Target{SessionId: s, ThreadId: "th-" + s}
		_, state := sys.clients.permission.GetPermissionState(ctx, &permissionv1.GetPermissionStateRequest{Target: target})
		_, profile := sys.clients.permission.GetSandboxProfile(ctx, &permissionv1.GetSandboxProfileRequest{Target: target})
		_, env := sys.clients.permission.GetExecutionEnvironment(ctx, &permissionv1.GetExecutionEnvironmentRequest{SessionId: s, TurnId: turns[s]})
		if status.Code(env) == codes.NotFound {
			env = nil // answered: no worker reported one
		}
		return map[string]error{"GetSession": getSession, "GetThreadRead": getThread, "ListSubagents": subagents,
			"GetTurnAttempts": attempts, "SubscribeEvents": firstEvent(ctx, c, s),
			"GetTask": task, "GetPermissionState": state, "GetSandboxProfile": profile, "GetExecutionEnvironment": env}
	}
	allowed := func(who string, errs map[string]error) {
		t.Helper()
		for rpc, err := range errs {
			if err != nil {
				t.Errorf("%s %s: %v, want it answered", who, rpc, err)
			}
		}
	}
	denied := func(who string, err error, want map[string]string) {
		t.Helper()
		st := status.Convert(err)
		if st.Code() != codes.PermissionDenied {
			t.Errorf("%s: %v, want PermissionDenied", who, err)
			return
		}
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == auth.ReasonSessionNotHeld {
				for k, v := range want {
					if info.GetMetadata()[k] != v {
						t.Errorf("%s: ErrorInfo %v, want %s=%s", who, info.GetMetadata(), k, v)
					}
				}
				return
			}
		}
		t.Errorf("%s: %v, want ErrorInfo %s", who, st.Details(), auth.ReasonSessionNotHeld)
	}
	deniedAll := func(who, s string, errs map[string]error) {
		t.Helper()
		for rpc, err := range errs {
			denied(who+" "+rpc+" of "+s, err, map[string]string{"session_id": s})
		}
	}

	allowed("worker A on s1", reads(a, "s1"))
	deniedAll("worker A", "s2", reads(a, "s2"))
	deniedAll("worker A", "s3", reads(a, "s3"))
	allowed("worker B on s2", reads(b, "s2"))
	deniedAll("worker B", "s1", reads(b, "s1"))
	for _, s := range []string{"s1", "s2", "s3"} {
		allowed("operator on "+s, reads(operator, s))
	}

	// Across the tenant: a worker never; the operator does.
	denied("worker A subscribing across the tenant", firstEvent(a, c, ""), map[string]string{"field": "session_id"})
	_, err = sys.clients.permission.GetPermissionState(a, &permissionv1.GetPermissionStateRequest{Target: &permissionv1.Target{}})
	denied("worker A reading the tenant's permission state", err, map[string]string{"field": "target.session_id"})
	if _, err := sys.clients.permission.GetPermissionState(operator, &permissionv1.GetPermissionStateRequest{Target: &permissionv1.Target{}}); err != nil {
		t.Errorf("operator reading the tenant's permission state: %v", err)
	}
	if err := firstEvent(operator, c, ""); err != nil {
		t.Errorf("operator subscribing across the tenant: %v", err)
	}

	// Outputs: s1's output is A's to read and the operator's, not B's.
	readOut := func(ctx context.Context) error {
		_, err := c.ReadOutput(ctx, &controlv1.ReadOutputRequest{Uri: uri})
		return err
	}
	if err := readOut(a); err != nil {
		t.Errorf("worker A reading its output %s: %v", uri, err)
	}
	if err := readOut(operator); err != nil {
		t.Errorf("operator reading %s: %v", uri, err)
	}
	denied("worker B reading s1's output", readOut(b), map[string]string{"session_id": "s1"})

	// A heartbeat keeps holding s1. A worker's submit holds nothing unless
	// it runs a task run the worker holds (TestAWorkerKeyRunsATaskRunAsATurn):
	// naming a run it does not hold, or none, is no way into a session.
	_, err = c.HeartbeatTurn(a, &controlv1.HeartbeatTurnRequest{TurnId: turns["s1"], RunId: claimA.GetRunId(), LeaseToken: claimA.GetLeaseToken()})
	must(err)
	allowed("worker A on s1 after its heartbeat", reads(a, "s1"))
	_, err = c.SubmitTurn(b, &controlv1.SubmitTurnRequest{SessionId: "s3", ThreadId: "th-s3", Input: text})
	must(err)
	_, err = c.SubmitTurn(b, &controlv1.SubmitTurnRequest{SessionId: "s3", ThreadId: "th-s3", Input: text,
		Metadata: map[string]string{"task_id": "task-s3", "task_run_id": claimA.GetRunId()}})
	must(err)
	deniedAll("worker B, after submitting to it,", "s3", reads(b, "s3"))

	// What this test refuses is what the role matrix marks "held".
	tested := []string{"GetSession", "GetThreadRead", "ListSubagents", "GetTurnAttempts", "SubscribeEvents", "ReadOutput"}
	for i, rpc := range tested {
		tested[i] = "/agentruntime.control.v1.ControlService/" + rpc
	}
	tested = append(tested, "/agentruntime.tasks.v1.TasksService/GetTask",
		"/agentruntime.permission.v1.PermissionService/GetPermissionState",
		"/agentruntime.permission.v1.PermissionService/GetSandboxProfile",
		"/agentruntime.permission.v1.PermissionService/GetExecutionEnvironment")
	slices.Sort(tested)
	if held := slices.Sorted(slices.Values(auth.HeldSessionReads)); !slices.Equal(tested, held) {
		t.Errorf("the test refuses %v to workers; the matrix marks %v held", tested, held)
	}
}

// firstEvent subscribes to session s (across the tenant when empty) from
// the start of the log and answers the error of the first message: nil
// when one was delivered.
func firstEvent(ctx context.Context, c controlv1.ControlServiceClient, s string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: s,
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	if err != nil {
		return err
	}
	_, err = stream.Recv()
	return err
}

// Worker processes on worker keys (pkg/worker, as `agentruntime worker`
// runs) still run a task run as a turn when the run's worker and the
// turn's claimer are two subjects: worker A polls the run, submits its
// turn and follows the turn's session to its end (SubscribeEvents on the
// session its submit holds) while worker B claims and runs the turn; A
// settles the run. The operator creates the task and sees it completed.
func TestAWorkerKeyRunsATaskRunAsATurn(t *testing.T) {
	st := alltest.Start(t, alltest.Options{Partitions: 1, Keys: []auth.APIKeyConfig{
		{Name: "olive", Tenant: "acme", Role: "operator", Key: operatorKey},
		{Name: "wa", Tenant: "acme", Role: "worker", Key: workerKey},
		{Name: "wb", Tenant: "acme", Role: "worker", Key: workerBKey},
	}})
	base, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	operator := metadata.AppendToOutgoingContext(base, "authorization", "Bearer "+operatorKey)
	script, err := provider.ParseScript([]byte("model: scripted\nturns:\n  - steps:\n      - text: \"Done.\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	// A runs task runs and claims turns of another session only (which
	// must exist first: it runs that session's turn); B claims the task's
	// turn, once its session exists, and pulls no task runs.
	if _, err := st.Control.SubmitTurn(operator, &controlv1.SubmitTurnRequest{SessionId: "s-other", ThreadId: "other",
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "go"}}}}); err != nil {
		t.Fatal(err)
	}
	runWorker(t, st.Addr, workerKey, provider.NewScripted(script), func(c *worker.Config) { c.WorkerID, c.Tasks, c.SessionID = "wa-1", true, "s-other" })
	follow, err := st.Control.SubscribeEvents(operator, &controlv1.SubscribeEventsRequest{SessionId: "s-task",
		TypePrefixes: []string{"task.", "turn."}, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	if err != nil {
		t.Fatal(err)
	}
	created, err := st.Tasks.CreateTask(operator, &tasksv1.CreateTaskRequest{SessionId: "s-task", ThreadId: "work",
		Spec: &tasksv1.TaskSpec{Title: "finish", Objective: "say done", TaskKind: "agent"}})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for {
		m, err := follow.Recv()
		if err != nil {
			t.Fatalf("following s-task (seen %v): %v", seen, err)
		}
		ev := m.GetEvent()
		if ev == nil {
			continue
		}
		seen = append(seen, ev.GetType())
		switch {
		case ev.GetType() == "turn.submitted":
			runWorker(t, st.Addr, workerBKey, provider.NewScripted(script), func(c *worker.Config) { c.WorkerID, c.SessionID = "wb-1", "s-task" })
		case ev.GetType() == "turn.started" && ev.GetTurnStarted().GetWorkerId() != "wb-1":
			t.Fatalf("the task's turn was started by %q, want worker B's wb-1", ev.GetTurnStarted().GetWorkerId())
		case ev.GetType() == "task.failed" || ev.GetType() == "turn.failed":
			t.Fatalf("%s: %v (seen %v)", ev.GetType(), ev, seen)
		case ev.GetType() == "task.completed" && ev.GetTaskId() == created.GetTask().GetTaskId():
			if !slices.Contains(seen, "turn.completed") {
				t.Fatalf("the task completed without its turn: %v", seen)
			}
			return
		}
	}
}

// runWorker runs a pkg/worker worker on key against addr until the test
// ends.
func runWorker(t *testing.T, addr, key string, p provider.Provider, mod func(*worker.Config)) {
	t.Helper()
	withKey := func(ctx context.Context) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, o ...grpc.CallOption) error {
			return invoker(withKey(ctx), method, req, reply, cc, o...)
		}),
		grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, o ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(withKey(ctx), desc, cc, method, o...)
		}))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	cfg := worker.Config{Conn: conn, Provider: p, DefaultModel: "scripted",
		Sandbox: tools.Sandbox{Root: root, WriteRoots: []string{root}}, LeaseTTL: 3 * time.Second, ClaimWait: time.Second,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))}
	mod(&cfg)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.New(cfg).Run(ctx) }()
	t.Cleanup(func() { stop(); <-done; conn.Close() })
}
