package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/binproc"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
	"github.com/agentruntime/agentruntime/pkg/worker/confine"
)

// binary is the real agentruntime, built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	confine.Main()
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	bin, cleanup, err := binproc.Build("", true)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// proc is a running agentruntime process.
type proc = binproc.Proc

// start runs the binary and waits until it is ready: for dev the end of its
// banner, for serve the "serving" log line.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	return binproc.Start(t, binary, nil, args...)
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

var healthNames = []string{
	"agentruntime.control.v1.ControlService",
	"agentruntime.tasks.v1.TasksService",
	"agentruntime.routing.v1.RoutingService",
	"agentruntime.permission.v1.PermissionService",
	"agentruntime.evidence.v1.EvidenceService",
}

func listServices(t *testing.T, conn *grpc.ClientConn) []string {
	t.Helper()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(testkit.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	return names
}

func checkHealth(t *testing.T, conn *grpc.ClientConn, name string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	resp, err := healthpb.NewHealthClient(conn).Check(testkit.Context(t), &healthpb.HealthCheckRequest{Service: name})
	if err != nil {
		t.Fatalf("health %q: %v", name, err)
	}
	return resp.GetStatus()
}

func TestDevServesEveryServiceWithHealthAndReflection(t *testing.T) {
	p := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	conn := dial(t, p.Addr)

	got := listServices(t, conn)
	for _, want := range append(slices.Clone(healthNames), "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection") {
		if !slices.Contains(got, want) {
			t.Errorf("reflection does not list %s (lists %v)", want, got)
		}
	}
	for _, name := range append([]string{""}, healthNames...) {
		if s := checkHealth(t, conn, name); s != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health %q = %v, want SERVING", name, s)
		}
	}
	if !strings.Contains(p.Output(), "tenant     dev") || !strings.Contains(p.Output(), "auth       off") {
		t.Errorf("banner does not say the tenant and that auth is off:\n%s", p.Output())
	}

	// Without auth config a call without credentials passes authentication
	// (it reaches the service), and request rules still apply.
	ctl := controlv1.NewControlServiceClient(conn)
	_, err := ctl.GetSession(testkit.Context(t), &controlv1.GetSessionRequest{SessionId: "sess_1"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("GetSession = %v, want NotFound (authenticated as the dev tenant, no such session)", err)
	}
	_, err = ctl.GetSession(testkit.Context(t), &controlv1.GetSessionRequest{SessionId: "bad.id"})
	assertFieldViolation(t, err, "session_id")
}

func assertFieldViolation(t *testing.T, err error, field string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("got %v, want InvalidArgument", err)
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				if v.GetField() == field {
					return
				}
			}
		}
	}
	t.Fatalf("InvalidArgument without a field violation on %s: %v", field, st.Details())
}

func writeAuthConfig(t *testing.T, key string, secret []byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hs256.key"), secret, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(key))
	cfg := fmt.Sprintf(`api_keys:
  - name: ci-bot
    tenant: acme
    role: admin
    key_sha256: %s
jwt:
  hs256_secret_file: %s
`, hex.EncodeToString(sum[:]), filepath.Join(dir, "hs256.key"))
	path := filepath.Join(dir, "auth.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func withBearer(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

func signHS256(t *testing.T, secret []byte, tenant string) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": "user-1", "tenant": tenant, "role": "operator",
		"exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestDevWithAuthAuthenticatesEveryCall(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	authFile := writeAuthConfig(t, "k-right", secret)
	p := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--auth", authFile)
	if !strings.Contains(p.Output(), "auth       on") {
		t.Errorf("banner does not say auth is on:\n%s", p.Output())
	}
	conn := dial(t, p.Addr)
	ctl := controlv1.NewControlServiceClient(conn)
	req := &controlv1.GetSessionRequest{SessionId: "sess_1"}
	cases := []struct {
		name string
		ctx  context.Context
		want codes.Code
	}{
		{"no credentials", testkit.Context(t), codes.Unauthenticated},
		{"wrong key", withBearer(testkit.Context(t), "k-wrong"), codes.Unauthenticated},
		{"bad JWT signature", withBearer(testkit.Context(t), signHS256(t, []byte("another-secret-another-secret-xx"), "acme")), codes.Unauthenticated},
		{"right key", withBearer(testkit.Context(t), "k-right"), codes.NotFound},
		{"good JWT", withBearer(testkit.Context(t), signHS256(t, secret, "acme")), codes.NotFound},
	}
	for _, c := range cases {
		if _, err := ctl.GetSession(c.ctx, req); status.Code(err) != c.want {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// Probes and reflection work without credentials.
	if s := checkHealth(t, conn, healthNames[0]); s != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health without credentials = %v", s)
	}
	if len(listServices(t, conn)) == 0 {
		t.Error("reflection without credentials listed nothing")
	}
}

func TestDevRefusesASecondProcessOnTheSameDataDir(t *testing.T) {
	dir := t.TempDir()
	start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", dir)
	out, err := exec.Command(binary, "dev", "--listen", "127.0.0.1:0", "--data-dir", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "in use by another agentruntime") {
		t.Fatalf("second dev on one data dir: err=%v output:\n%s", err, out)
	}
}

func TestDevComesBackAfterKill9(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", dir)
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.Cmd.Wait()
	p2 := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", dir)
	if s := checkHealth(t, dial(t, p2.Addr), healthNames[0]); s != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("after kill -9 and restart: %v", s)
	}
}

func TestServeRunsOneServiceAgainstNATSAndRedis(t *testing.T) {
	nats := natstest.Server(t)
	authFile := writeAuthConfig(t, "k-right", []byte("0123456789abcdef0123456789abcdef"))
	p := start(t, "serve", "tasks", "--listen", "127.0.0.1:0",
		"--nats", nats.ClientURL(), "--redis", redistest.URL(t), "--auth", authFile)
	conn := dial(t, p.Addr)
	if s := checkHealth(t, conn, "agentruntime.tasks.v1.TasksService"); s != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("tasks health = %v", s)
	}
	got := listServices(t, conn)
	if !slices.Contains(got, "agentruntime.tasks.v1.TasksService") || slices.Contains(got, "agentruntime.control.v1.ControlService") {
		t.Fatalf("serve tasks lists %v", got)
	}
	// serve always authenticates.
	_, err := tasksv1.NewTasksServiceClient(conn).GetTask(testkit.Context(t), &tasksv1.GetTaskRequest{TaskId: "task_1"})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("call without credentials: %v", err)
	}
}

func TestServeNamesWhatIsMissing(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "name the service"},
		{[]string{"serve", "billing"}, `unknown service "billing"`},
		{[]string{"serve", "control"}, "--auth, --nats, --redis required"},
		{[]string{"serve", "control", "--nats", "nats://x", "--redis", "redis://x"}, "--auth required"},
		{[]string{"dev", "--bogus"}, "flag provided but not defined: -bogus"},
	}
	for _, c := range cases {
		out, err := exec.Command(binary, c.args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("agentruntime %v: err=%v, output does not say %q:\n%s", c.args, err, c.want, out)
		}
	}
}

// Without --auth every caller is the tenant's admin, so dev refuses an
// address other machines can reach unless told it is insecure.
func TestDevWithoutAuthRefusesANonLoopbackListen(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", ":0"} {
		out, err := exec.Command(binary, "dev", "--listen", listen, "--data-dir", t.TempDir()).CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if err == nil || len(lines) != 1 || !strings.Contains(lines[0], "refuses to listen on "+listen) || !strings.Contains(lines[0], "--insecure-no-auth") {
			t.Errorf("dev --listen %s without --auth: err=%v, want one line refusing it; output:\n%s", listen, err, out)
		}
	}
	p := start(t, "dev", "--listen", "0.0.0.0:0", "--data-dir", t.TempDir(), "--insecure-no-auth", "--no-worker")
	if !strings.Contains(p.Output(), "INSECURE (--insecure-no-auth)") {
		t.Errorf("--insecure-no-auth started without saying it is insecure:\n%s", p.Output())
	}
	secret := []byte("0123456789abcdef0123456789abcdef")
	withAuth := start(t, "dev", "--listen", "0.0.0.0:0", "--data-dir", t.TempDir(), "--auth", writeAuthConfig(t, "k", secret), "--no-worker")
	if !strings.Contains(withAuth.Output(), "auth       on") {
		t.Errorf("dev --auth on 0.0.0.0 did not start with auth on:\n%s", withAuth.Output())
	}
}
