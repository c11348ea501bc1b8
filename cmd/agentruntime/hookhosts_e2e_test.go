package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
)

// registerHook registers a pre-tool-use hook calling target (an http URL or
// a gRPC target) and returns the call's error.
func registerHook(ctx context.Context, c permissionv1.PermissionServiceClient, id, target string) error {
	h := &eventsv1.Hook{HookId: id, Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE}
	if strings.HasPrefix(target, "http") {
		h.Handler = &eventsv1.Hook_HttpUrl{HttpUrl: target}
	} else {
		h.Handler = &eventsv1.Hook_GrpcTarget{GrpcTarget: target}
	}
	_, err := c.RegisterHook(ctx, &permissionv1.RegisterHookRequest{Hook: h})
	return err
}

// The permission service calls hooks from inside the deployment, so a
// hook's target is a request the server makes: RegisterHook refuses a
// host --hook-allow-hosts does not allow, naming the hook's target field.
// dev allows loopback by default; serve allows none unless told.
func TestHookTargetsAreLimitedToAllowedHosts(t *testing.T) {
	ctx := testkit.Context(t)
	dev := permissionv1.NewPermissionServiceClient(dial(t, start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker").Addr))
	for i, target := range []string{"http://169.254.169.254/latest/meta-data", "http://10.0.0.7:8080/hook", "https://internal.example/hook", "redis.internal:6379", "dns:///10.1.2.3:50051", "unix:///var/run/docker.sock"} {
		field := "hook.grpc_target"
		if strings.HasPrefix(target, "http") {
			field = "hook.http_url"
		}
		assertFieldViolation(t, registerHook(ctx, dev, "h"+string(rune('a'+i)), target), field)
	}
	for i, target := range []string{"http://127.0.0.1:9/hook", "http://localhost:9/hook", "[::1]:50051", "127.0.0.1:50051"} {
		if err := registerHook(ctx, dev, "ok"+string(rune('a'+i)), target); err != nil {
			t.Errorf("dev refused the loopback hook %s: %v", target, err)
		}
	}

	allowed := permissionv1.NewPermissionServiceClient(dial(t, start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker",
		"--hook-allow-hosts", "hooks.internal:8443, *.hooks.example").Addr))
	if err := registerHook(ctx, allowed, "named", "https://hooks.internal:8443/pre"); err != nil {
		t.Errorf("an allowed host:port: %v", err)
	}
	if err := registerHook(ctx, allowed, "wild", "a.hooks.example:443"); err != nil {
		t.Errorf("a host under an allowed wildcard: %v", err)
	}
	assertFieldViolation(t, registerHook(ctx, allowed, "port", "https://hooks.internal/pre"), "hook.http_url")
	assertFieldViolation(t, registerHook(ctx, allowed, "loop", "http://127.0.0.1:9/hook"), "hook.http_url")

	out, err := exec.Command(binary, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker", "--hook-allow-hosts", "http://x/y").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--hook-allow-hosts") {
		t.Errorf("an invalid pattern: err=%v, want a flag error naming --hook-allow-hosts; output:\n%s", err, out)
	}

	const key = "k-serve-admin"
	nats, redisURL := natstest.Server(t), redistest.URL(t)
	authFile := writeAuthConfig(t, key, []byte("0123456789abcdef0123456789abcdef"))
	serve := permissionv1.NewPermissionServiceClient(dial(t, start(t, "serve", "permission", "--listen", "127.0.0.1:0",
		"--nats", nats.ClientURL(), "--redis", redisURL, "--auth", authFile).Addr))
	assertFieldViolation(t, registerHook(withBearer(ctx, key), serve, "loop", "127.0.0.1:50051"), "hook.grpc_target")
}
