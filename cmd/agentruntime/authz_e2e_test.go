package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
)

// writeRoleAuth writes an auth file with an operator key (subject alice),
// a worker key (subject bot-1) and HS256 JWTs.
func writeRoleAuth(t *testing.T, secret []byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hs256.key"), secret, 0o600); err != nil {
		t.Fatal(err)
	}
	hash := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	cfg := fmt.Sprintf(`api_keys:
  - {name: alice, tenant: acme, role: operator, key_sha256: %s}
  - {name: bot-1, tenant: acme, role: worker, key_sha256: %s}
jwt:
  hs256_secret_file: hs256.key
`, hash("k-operator"), hash("k-worker"))
	path := filepath.Join(dir, "auth.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func signAs(t *testing.T, secret []byte, subject, role string) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": subject, "tenant": "acme", "role": role, "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func wantDenied(t *testing.T, what string, err error, reason string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.PermissionDenied {
		t.Fatalf("%s: got %v, want PermissionDenied %s", what, err, reason)
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == reason {
			return
		}
	}
	t.Fatalf("%s: %v carries no ErrorInfo %s (details %v)", what, err, reason, st.Details())
}

// The real binary with roles on: a worker process with a worker key runs a
// turn an operator submitted; the approval its turn asks for is never
// answered by the worker principal (not with its worker key, and not with
// a credential for the same subject under the operator role, on either the
// control or the permission service); the operator's answer is recorded
// and the turn completes.
func TestWorkerNeverApprovesItsOwnRequest(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# A project\nIt says hello.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := []byte("0123456789abcdef0123456789abcdef")
	dev := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--auth", writeRoleAuth(t, secret))
	worker := exec.Command(binary, "worker", "--addr", dev.Addr, "--api-key", "k-worker", "--workspace", ws, "--worker-id", "w1")
	var wout bytes.Buffer // written by the process's copier, read after Wait
	worker.Stdout, worker.Stderr = &wout, &wout
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = worker.Process.Kill()
		_ = worker.Wait()
		if t.Failed() {
			t.Logf("worker output:\n%s", wout.String())
		}
	})
	conn := dial(t, dev.Addr)
	control := controlv1.NewControlServiceClient(conn)
	permission := permissionv1.NewPermissionServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	asOperator := withBearer(ctx, "k-operator")
	stream, err := control.SubscribeEvents(asOperator, &controlv1.SubscribeEventsRequest{
		SessionId: "default", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1, TypePrefixes: []string{"turn.", "action."},
	})
	if err != nil {
		t.Fatal(err)
	}
	next := func(typ string) *eventsv1.RuntimeEvent {
		t.Helper()
		for {
			m, err := stream.Recv()
			if err != nil {
				t.Fatalf("waiting for %s: %v", typ, err)
			}
			if ev := m.GetEvent(); ev.GetType() == typ {
				return ev
			}
		}
	}
	cli(t, "submit", "--addr", dev.Addr, "--api-key", "k-operator", "write notes about this project")
	if started := next("turn.started"); started.GetTurnStarted().GetWorkerId() != "w1" {
		t.Fatalf("turn.started = %v", started)
	}
	asked := next("action.required")
	if r := asked.GetActionRequired(); r.GetRequesterSubject() != "bot-1" || r.GetRequesterRole() != "worker" {
		t.Fatalf("action.required does not record the worker that asked: %v", r)
	}
	respond := &controlv1.RespondActionRequest{ActionId: asked.GetActionId(), Decision: "allow_once"}
	resolve := &permissionv1.ResolvePermissionRequest{SessionId: asked.GetSessionId(), ActionId: asked.GetActionId(), Decision: "allow_once"}

	// The worker's own key: its role answers nothing.
	_, err = control.RespondAction(withBearer(ctx, "k-worker"), respond)
	wantDenied(t, "RespondAction with the worker key", err, "ROLE_NOT_PERMITTED")
	_, err = permission.ResolvePermission(withBearer(ctx, "k-worker"), resolve)
	wantDenied(t, "ResolvePermission with the worker key", err, "ROLE_NOT_PERMITTED")
	if out, err := exec.Command(binary, "approve", "--addr", dev.Addr, "--api-key", "k-worker").CombinedOutput(); err == nil || !strings.Contains(string(out), "needs role operator") {
		t.Fatalf("`agentruntime approve` with the worker key: err=%v\n%s", err, out)
	}
	// Nor does it change what governs it (before roles, any key of a
	// tenant could switch the mode to bypass, replace the rules, or change
	// the registry and the limits).
	asWorker := withBearer(ctx, "k-worker")
	_, err = permission.SetPermissionMode(asWorker, &permissionv1.SetPermissionModeRequest{})
	wantDenied(t, "SetPermissionMode with the worker key", err, "ROLE_NOT_PERMITTED")
	_, err = permission.PutRules(asWorker, &permissionv1.PutRulesRequest{})
	wantDenied(t, "PutRules with the worker key", err, "ROLE_NOT_PERMITTED")
	routing := routingv1.NewRoutingServiceClient(conn)
	_, err = routing.UpdateModelRegistry(asWorker, &routingv1.UpdateModelRegistryRequest{})
	wantDenied(t, "UpdateModelRegistry with the worker key", err, "ROLE_NOT_PERMITTED")
	_, err = routing.UpdateLimitConfig(withBearer(ctx, "k-operator"), &routingv1.UpdateLimitConfigRequest{})
	wantDenied(t, "UpdateLimitConfig with the operator key", err, "ROLE_NOT_PERMITTED")
	// The same subject with an operator credential: still the requester.
	sameSubject := withBearer(ctx, signAs(t, secret, "bot-1", "operator"))
	_, err = control.RespondAction(sameSubject, respond)
	wantDenied(t, "RespondAction by the requesting subject as operator", err, "SELF_APPROVAL")
	_, err = permission.ResolvePermission(sameSubject, resolve)
	wantDenied(t, "ResolvePermission by the requesting subject as operator", err, "SELF_APPROVAL")
	// Nothing was resolved.
	th, err := control.GetThreadRead(asOperator, &controlv1.GetThreadReadRequest{SessionId: "default", ThreadId: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if p := th.GetThread().GetPendingActions(); len(p) != 1 || p[0].GetActionId() != asked.GetActionId() || p[0].GetStatus() != controlv1.ActionStatus_ACTION_STATUS_PENDING {
		t.Fatalf("pending actions after the refused answers: %v", p)
	}

	// A person answers.
	cli(t, "approve", "--addr", dev.Addr, "--api-key", "k-operator")
	resolved := next("action.resolved")
	if resolved.GetActionId() != asked.GetActionId() || resolved.GetActionResolved().GetResponder() != "alice" {
		t.Fatalf("action.resolved = %v", resolved)
	}
	if done := next("turn.completed"); done.GetTurnId() != asked.GetTurnId() {
		t.Fatalf("turn.completed = %v", done)
	}
}
