package permission_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/server"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/permission"
)

// BenchmarkEvaluatePermission measures EvaluatePermission over real gRPC
// on loopback (a shell command parsed, rules, mode, sandbox, and the
// facts appended to JetStream): the common path, a command that runs
// sandboxed (permission.evaluated + sandbox.applied, one atomic batch),
// without a hook and with one pre_tool_use hook round trip to a host's
// HookHandler; and a destructive command the mode asks a human about
// (permission.evaluated, then permission.requested on the request's own
// aggregate: two single-event appends).
// Each iteration also makes the raw building block, a health Check on the
// same server, and the benchmark reports both rates and their ratio.
// AR_BENCH_MEMORY=1 puts the stream in memory, where nats-server stages an
// atomic batch in memory as it does at R3, instead of in a file store of
// its own at R1 (docs/adr/0005-hot-path.md, "Atomic commands").
func BenchmarkEvaluatePermission(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := eventlog.Config{}
	if os.Getenv("AR_BENCH_MEMORY") != "" {
		cfg.Storage = jetstream.MemoryStorage
	}
	log, err := eventlog.Open(ctx, natstest.Connect(b, natstest.Server(b)), cfg)
	if err != nil {
		b.Fatal(err)
	}
	svc := permission.New(kit.Deps{Log: log, Store: projection.NewMemory()})
	go func() { _ = svc.Run(ctx) }()
	srv, err := server.New(server.Config{Authenticator: auth.Anonymous("bench")})
	if err != nil {
		b.Fatal(err)
	}
	svc.Register(srv.GRPC())
	srv.MarkServing(svc.HealthName())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ctx, lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	client := permissionv1.NewPermissionServiceClient(conn)
	health := healthpb.NewHealthClient(conn)
	hookTarget := startHookServer(b, func(context.Context, *permissionv1.HandleHookRequest) (*permissionv1.HandleHookResponse, error) {
		return &permissionv1.HandleHookResponse{Decision: eventsv1.HookOutcome_HOOK_OUTCOME_CONTINUE}, nil
	})
	setup, err := client.SetSandboxProfile(ctx, &permissionv1.SetSandboxProfileRequest{Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT},
		Profile: &eventsv1.SandboxProfile{Mode: eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE, Cwd: "/work", WriteRoots: []string{"/work"}}})
	if err != nil {
		b.Fatal(err)
	}
	reg, err := client.RegisterHook(ctx, &permissionv1.RegisterHookRequest{Hook: &eventsv1.Hook{HookId: "bench", Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE,
		ToolMatcher: "hooked", Handler: &eventsv1.Hook_GrpcTarget{GrpcTarget: hookTarget}}})
	if err != nil {
		b.Fatal(err)
	}
	// on_request: a change inside the sandbox runs sandboxed, the common
	// path; a destructive one (a redirect that overwrites) asks.
	mode, err := client.SetPermissionMode(ctx, &permissionv1.SetPermissionModeRequest{Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT},
		Mode: eventsv1.PermissionMode_PERMISSION_MODE_ON_REQUEST, Interactive: true})
	if err != nil {
		b.Fatal(err)
	}
	minSeq := max(setup.GetWrite().GetSequence(), reg.GetWrite().GetSequence(), mode.GetWrite().GetSequence())

	const sandboxed, destructive = "git status && go test ./... && gofmt -w main.go", "git status && go test ./... > out.txt"
	for _, tc := range []struct {
		name, tool, command string
		want                eventsv1.Decision
	}{
		{"no_hook", "shell", sandboxed, eventsv1.Decision_DECISION_SANDBOXED},
		{"grpc_hook", "hooked", sandboxed, eventsv1.Decision_DECISION_SANDBOXED},
		{"ask", "shell", destructive, eventsv1.Decision_DECISION_ASK},
	} {
		b.Run(tc.name, func(b *testing.B) {
			req := &permissionv1.EvaluatePermissionRequest{SessionId: "sess_bench", ThreadId: "thr_bench", TurnId: "turn_bench",
				Target: eventsv1.TargetKind_TARGET_KIND_TOOL, Name: tc.tool, Access: eventsv1.Access_ACCESS_EXECUTE,
				Command: tc.command, ArgumentsJson: `{"command":"` + tc.command + `"}`, MinSequence: minSeq}
			if res, err := client.EvaluatePermission(ctx, req); err != nil || res.GetEvaluation().GetDecision() != tc.want {
				b.Fatalf("evaluation: %v %v, want %v", res.GetEvaluation().GetDecision(), err, tc.want)
			}
			var evalTime, rawTime time.Duration
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				if _, err := client.EvaluatePermission(ctx, req); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc.HealthName()}); err != nil {
					b.Fatal(err)
				}
				evalTime += t1.Sub(t0)
				rawTime += time.Since(t1)
			}
			evals := float64(b.N) / evalTime.Seconds()
			raw := float64(b.N) / rawTime.Seconds()
			b.ReportMetric(evals, "evals/s")
			b.ReportMetric(raw, "raw-rt/s")
			b.ReportMetric(evals/raw, "ratio")
		})
	}
}
