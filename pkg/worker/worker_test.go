package worker_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/server"
	otelpkg "github.com/agentruntime/agentruntime/pkg/telemetry"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/pkg/worker"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
	"github.com/agentruntime/agentruntime/services/control"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/permission"
	"github.com/agentruntime/agentruntime/services/routing"
	"github.com/agentruntime/agentruntime/services/tasks"
)

// runtime is control, permission and routing in process on a real
// JetStream, behind the server kit, as `agentruntime dev` composes them.
type runtime struct {
	conn    *grpc.ClientConn
	control controlv1.ControlServiceClient
	log     *eventlog.Log
	srv     *server.Server
	// failPermission makes this many next permission calls answer
	// Unavailable (negative: every one), as a restarting service would.
	failPermission *atomic.Int32
	// failReports makes this many next ReportEvents calls answer Aborted
	// or Unavailable (alternately) after the service handled them (negative:
	// the first attempt of every report): the worker's retry must append
	// nothing twice.
	failReports *atomic.Int32
	// noDelegate makes DelegateTaskRun answer Unimplemented, as a tasks
	// service of an older release does.
	noDelegate *atomic.Bool
	// served counts the calls the server answered, by method and session
	// ("method|session" to *atomic.Int32; ReportEvents by the session of
	// its facts).
	served *sync.Map
}

// reports is how many ReportEvents calls control served for a session.
func (rt *runtime) reports(session string) int32 {
	return rt.calls(controlv1.ControlService_ReportEvents_FullMethodName, session)
}

// calls is how many calls of a method the server answered for a session.
func (rt *runtime) calls(method, session string) int32 {
	if n, ok := rt.served.Load(method + "|" + session); ok {
		return n.(*atomic.Int32).Load()
	}
	return 0
}

func startRuntime(t testing.TB) *runtime { return startRuntimeWith(t, false) }

// telemetry is what a traced runtime records to (trace_test.go).
type telemetry struct {
	tp trace.TracerProvider
	mp metric.MeterProvider
}

// startRuntimeWith also serves the tasks service when withTasks, and
// records spans and metrics to tel when given.
func startRuntimeWith(t testing.TB, withTasks bool, tel ...telemetry) *runtime {
	t.Helper()
	var tm telemetry
	if len(tel) > 0 {
		tm = tel[0]
	}
	log, err := eventlog.Open(context.Background(), natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	failPermission, failReports := new(atomic.Int32), new(atomic.Int32)
	noDelegate := new(atomic.Bool)
	var reported, answered sync.Map
	fault := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		session := ""
		if r, ok := req.(interface{ GetSessionId() string }); ok {
			session = r.GetSessionId()
		}
		if r, ok := req.(*controlv1.ReportEventsRequest); ok && len(r.GetEvents()) > 0 {
			session = r.GetEvents()[0].GetSessionId()
		}
		n, _ := answered.LoadOrStore(info.FullMethod+"|"+session, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		if info.FullMethod == controlv1.ControlService_ReportEvents_FullMethodName {
			first := req.(*controlv1.ReportEventsRequest).GetEvents()[0].GetEventId()
			_, retried := reported.LoadOrStore(first, true)
			if n := failReports.Load(); (n < 0 && !retried) || (n > 0 && failReports.CompareAndSwap(n, n-1)) {
				if _, err := handler(ctx, req); err != nil {
					return nil, err
				}
				if n%2 == 0 {
					return nil, status.Error(codes.Aborted, "concurrent changes kept conflicting (test fault)")
				}
				return nil, status.Error(codes.Unavailable, "control is restarting (test fault)")
			}
		}
		if info.FullMethod == tasksv1.TasksService_DelegateTaskRun_FullMethodName && noDelegate.Load() {
			return nil, status.Error(codes.Unimplemented, "unknown method DelegateTaskRun (test fault: an older release)")
		}
		if strings.HasPrefix(info.FullMethod, "/agentruntime.permission.") {
			if n := failPermission.Load(); n < 0 || (n > 0 && failPermission.CompareAndSwap(n, n-1)) {
				return nil, status.Error(codes.Unavailable, "permission is restarting (test fault)")
			}
		}
		return handler(ctx, req)
	}
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", Authenticator: auth.Anonymous("t1"),
		TracerProvider: tm.tp, MeterProvider: tm.mp,
		GRPCOptions: []grpc.ServerOption{grpc.ChainUnaryInterceptor(fault)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if tm.tp != nil {
		ctx = projector.ContextWithOptions(ctx, projector.WithTracerProvider(tm.tp))
	}
	var done []chan error
	// The services directly (not services/all): the worker needs these
	// three, and tasks for task runs.
	deps := func() kit.Deps {
		return kit.Deps{Log: log, Store: projection.NewMemory(), TracerProvider: tm.tp, MeterProvider: tm.mp}
	}
	svcs := []kit.Service{control.New(deps()), permission.New(deps()), routing.New(deps())}
	if withTasks {
		svcs = append(svcs, tasks.New(deps()))
	}
	for _, svc := range svcs {
		svc.Register(srv.GRPC())
		if r, ok := svc.(kit.Runner); ok {
			ch := make(chan error, 1)
			done = append(done, ch)
			go func() { ch <- r.Run(ctx) }()
		}
	}
	// The worker claims only once what it needs says it is serving.
	for _, svc := range svcs {
		srv.MarkServing(svc.HealthName())
	}
	lis, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis) }()
	dial := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if tm.tp != nil {
		dial = append(dial, grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(tm.tp), otelgrpc.WithPropagators(otelpkg.Propagator()))))
	}
	conn, err := grpc.NewClient(lis.Addr().String(), dial...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-served
		for _, ch := range done {
			<-ch
		}
		conn.Close()
	})
	return &runtime{conn: conn, control: controlv1.NewControlServiceClient(conn), log: log, srv: srv, failPermission: failPermission, failReports: failReports, noDelegate: noDelegate, served: &answered}
}

// startWorker runs a worker until the test ends.
func (rt *runtime) startWorker(t testing.TB, p provider.Provider, root string, mod ...func(*worker.Config)) {
	t.Helper()
	cfg := worker.Config{WorkerID: "w1", Conn: rt.conn, Provider: p, DefaultModel: "scripted",
		Sandbox: tools.Sandbox{Root: root, WriteRoots: []string{root}}, LeaseTTL: 3 * time.Second, ClaimWait: time.Second,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	for _, m := range mod {
		m(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.New(cfg).Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func text(s string) []*eventsv1.InputPart {
	return []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: s}}}
}

// timeline follows a session's events.
type timeline struct {
	t      *testing.T
	stream grpc.ServerStreamingClient[controlv1.SubscribeEventsResponse]
	seen   []*eventsv1.RuntimeEvent
}

func (rt *runtime) follow(t *testing.T, session string) *timeline {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	s, err := rt.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: session, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	if err != nil {
		t.Fatal(err)
	}
	return &timeline{t: t, stream: s}
}

func (tl *timeline) until(typ string) *eventsv1.RuntimeEvent {
	tl.t.Helper()
	for {
		m, err := tl.stream.Recv()
		if err != nil {
			tl.t.Fatalf("waiting for %s after %v: %v", typ, testkit.Types(tl.seen), err)
		}
		if ev := m.GetEvent(); ev != nil {
			tl.seen = append(tl.seen, ev)
			if ev.GetType() == typ {
				return ev
			}
			if ev.GetType() == "turn.failed" {
				tl.t.Fatalf("waiting for %s: %v after %v", typ, ev, testkit.Types(tl.seen))
			}
		}
	}
}

// inOrder checks want appears in got as a subsequence.
func inOrder(t *testing.T, got []string, want ...string) {
	t.Helper()
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Fatalf("timeline %v lacks %v (in order) from %q", got, want, want[i])
	}
}

const demoScript = `
model: scripted
turns:
  - steps:
      - reasoning: "The user wants notes; read the README first."
        text: "Reading the README."
        tool_calls: [{name: read_file, arguments: {path: README.md}}]
        usage: {input_tokens: 120, output_tokens: 14}
      - text: "Writing NOTES.md."
        tool_calls: [{name: write_file, arguments: {path: NOTES.md, content: "# Notes\nThe README says hello.\n"}}]
        usage: {input_tokens: 180, output_tokens: 30}
      - text: "Done: NOTES.md summarizes the README."
        usage: {input_tokens: 220, output_tokens: 9}
`

func workspace(t *testing.T) string {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("hello from the README\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func scripted(t testing.TB, src string) provider.Provider {
	s, err := provider.ParseScript([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return provider.NewScripted(s)
}

func respond(t *testing.T, rt *runtime, action, decision string) {
	t.Helper()
	if _, err := rt.control.RespondAction(context.Background(), &controlv1.RespondActionRequest{ActionId: action, Decision: decision}); err != nil {
		t.Fatalf("RespondAction %s: %v", decision, err)
	}
}

// The README tour's flow: a scripted turn reads a file, asks to write
// one, is approved and finishes; every step is a fact.
func TestScriptedTurnReadsAsksAndFinishesWhenApproved(t *testing.T) {
	rt := startRuntime(t)
	root := workspace(t)
	rt.startWorker(t, scripted(t, demoScript), root)
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn1", Input: text("write notes about the README")}); err != nil {
		t.Fatal(err)
	}
	req := tl.until("action.required")
	if _, err := os.Stat(filepath.Join(root, "NOTES.md")); !os.IsNotExist(err) {
		t.Fatalf("NOTES.md written before approval: %v", err)
	}
	respond(t, rt, req.GetActionId(), "allow_once")
	done := tl.until("turn.completed")
	if done.GetTurnCompleted().GetSummary() != "Done: NOTES.md summarizes the README." {
		t.Fatalf("summary %q", done.GetTurnCompleted().GetSummary())
	}
	b, err := os.ReadFile(filepath.Join(root, "NOTES.md"))
	if err != nil || !strings.Contains(string(b), "The README says hello.") {
		t.Fatalf("NOTES.md = %q, %v", b, err)
	}
	inOrder(t, testkit.Types(tl.seen), "turn.submitted", "turn.started", "context.resolved", "tool.catalog.resolved", "routing.not_possible", "run.status",
		"model.requested", "reasoning.delta", "model.delta", "model.completed", "tool.started", "tool.args", "permission.evaluated", "tool.result",
		"model.requested", "model.completed", "tool.started", "permission.evaluated", "permission.requested", "action.required",
		"action.resolved", "permission.resolved", "tool.result", "model.requested", "model.delta", "model.completed", "turn.completed")
	for _, ev := range tl.seen {
		if ev.GetType() == "tool.result" && ev.GetToolCallId() == "" {
			t.Fatalf("tool fact without a call id: %v", ev)
		}
	}
}

func TestDeniedWriteIsAPermissionFailure(t *testing.T) {
	rt := startRuntime(t)
	root := workspace(t)
	rt.startWorker(t, scripted(t, demoScript), root)
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", Input: text("notes")}); err != nil {
		t.Fatal(err)
	}
	respond(t, rt, tl.until("action.required").GetActionId(), "deny")
	f := tl.until("tool.failed")
	if f.GetToolFailed().GetCategory() != "permission_denied" {
		t.Fatalf("tool.failed = %v", f)
	}
	tl.until("turn.completed") // the model is told and finishes
	if _, err := os.Stat(filepath.Join(root, "NOTES.md")); !os.IsNotExist(err) {
		t.Fatalf("a denied write happened: %v", err)
	}
}

func TestInterruptWhileWaitingForApprovalCancelsTheTurn(t *testing.T) {
	rt := startRuntime(t)
	rt.startWorker(t, scripted(t, demoScript), workspace(t))
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", Input: text("notes")}); err != nil {
		t.Fatal(err)
	}
	tl.until("action.required")
	if _, err := rt.control.InterruptTurn(context.Background(), &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: "main", Reason: "changed my mind"}); err != nil {
		t.Fatal(err)
	}
	f := tl.until("turn.failed")
	if f.GetTurnFailed().GetOutcome() != eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED || f.GetTurnFailed().GetCategory() != "interrupted" {
		t.Fatalf("turn.failed = %v", f)
	}
	// The wait ended because of the interrupt, not the approval's timeout:
	// the action was cancelled, not expired.
	for _, ev := range tl.seen {
		if r := ev.GetActionResolved(); r != nil && r.GetOutcome() != eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED {
			t.Fatalf("the pending approval ended %v, want cancelled by the interrupt", r.GetOutcome())
		}
	}
	// The waiting call ends cancelled before the turn does, whether the
	// turn was parked (control ends it and its call) or still held by its
	// worker (interrupt_requested, then the worker ends both).
	var call *eventsv1.RuntimeEvent
	for _, ev := range tl.seen {
		if ev.GetType() == "tool.failed" {
			call = ev
		}
	}
	if call.GetToolFailed().GetCategory() != "cancelled" {
		t.Fatalf("the waiting call ended %v, want tool.failed cancelled", call)
	}
	inOrder(t, testkit.Types(tl.seen), "action.required", "action.resolved", "turn.failed")
	inOrder(t, testkit.Types(tl.seen), "action.required", "tool.failed", "turn.failed")
}
