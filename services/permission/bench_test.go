package permission_test

import (
	"context"
	"net"
	"testing"
	"time"

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
// permission.evaluated + sandbox.applied appends to JetStream), without a
// hook and with one pre_tool_use hook round trip to a host's HookHandler.
// Each iteration also makes the raw building block, a health Check on the
// same server, and the benchmark reports both rates and their ratio.
func BenchmarkEvaluatePermission(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(b, natstest.Server(b)), eventlog.Config{})
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
	// on_request: the command runs sandboxed, the common path (no ask).
	mode, err := client.SetPermissionMode(ctx, &permissionv1.SetPermissionModeRequest{Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT},
		Mode: eventsv1.PermissionMode_PERMISSION_MODE_ON_REQUEST, Interactive: true})
	if err != nil {
		b.Fatal(err)
	}
	minSeq := max(setup.GetWrite().GetSequence(), reg.GetWrite().GetSequence(), mode.GetWrite().GetSequence())

	for _, tc := range []struct{ name, tool string }{{"no_hook", "shell"}, {"grpc_hook", "hooked"}} {
		b.Run(tc.name, func(b *testing.B) {
			req := &permissionv1.EvaluatePermissionRequest{SessionId: "sess_bench", ThreadId: "thr_bench", TurnId: "turn_bench",
				Target: eventsv1.TargetKind_TARGET_KIND_TOOL, Name: tc.tool, Access: eventsv1.Access_ACCESS_EXECUTE,
				Command: "git status && go test ./... > out.txt", ArgumentsJson: `{"command":"git status && go test ./... > out.txt"}`, MinSequence: minSeq}
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
