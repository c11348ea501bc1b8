package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker"
)

// workerApplied is the worker's sandbox.applied (the permission service's
// own, for its decision, has no network enforcement).
func workerApplied(evs []*eventsv1.RuntimeEvent) []*eventsv1.RuntimeEvent {
	var out []*eventsv1.RuntimeEvent
	for _, e := range evs {
		if e.GetType() == "sandbox.applied" && e.GetSandboxApplied().GetNetworkEnforcement() != eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_UNSPECIFIED {
			out = append(out, e)
		}
	}
	return out
}

func indexOf(evs []*eventsv1.RuntimeEvent, match func(*eventsv1.RuntimeEvent) bool) int {
	return slices.IndexFunc(evs, match)
}

// A link inside the workspace that leads out of it: the permission
// service judges the path as given (inside) and allows the read; the
// worker's sandbox resolves the link and refuses. The refusal is a
// sandbox.violation with the call's ids, recorded through the permission
// service, after the worker's sandbox.applied and before
// tool.failed{sandbox_violation}.
func TestWorkerSandboxRefusalIsAViolation(t *testing.T) {
	rt := startRuntime(t)
	root, outside := workspace(t), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	rt.startWorker(t, scripted(t, `
model: scripted
turns:
  - steps:
      - tool_calls: [{name: read_file, arguments: {path: escape/secret}}]
      - text: "It is outside."
`), root)
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn1", Input: text("read the secret")}); err != nil {
		t.Fatal(err)
	}
	tl.until("turn.completed")
	evs := tl.seen
	fi := indexOf(evs, func(e *eventsv1.RuntimeEvent) bool { return e.GetType() == "tool.failed" })
	vi := indexOf(evs, func(e *eventsv1.RuntimeEvent) bool { return e.GetType() == "sandbox.violation" })
	if fi < 0 || vi < 0 || vi > fi {
		t.Fatalf("violation at %d, tool.failed at %d in %v", vi, fi, testkit.Types(evs))
	}
	failed, v := evs[fi], evs[vi]
	if failed.GetToolFailed().GetCategory() != "sandbox_violation" {
		t.Fatalf("tool.failed = %v", failed)
	}
	got := []string{v.GetSessionId(), v.GetThreadId(), v.GetTurnId(), v.GetStepId(), v.GetToolCallId()}
	want := []string{"s1", "main", "turn1", failed.GetStepId(), failed.GetToolCallId()}
	if !slices.Equal(got, want) || v.GetStepId() == "" {
		t.Fatalf("violation ids %v, want %v", got, want)
	}
	sv := v.GetSandboxViolation()
	if sv.GetKind() != eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_READ || !sv.GetBlocked() ||
		sv.GetTarget() != filepath.Join(root, "escape", "secret") || !strings.Contains(sv.GetReason(), "a link to") {
		t.Fatalf("violation = %v", sv)
	}
	// The decision it ran under, and the profile applied to the call.
	ei := indexOf(evs, func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "permission.evaluated" && e.GetToolCallId() == failed.GetToolCallId()
	})
	if ei < 0 || sv.GetEvaluationId() != evs[ei].GetPermissionEvaluated().GetEvaluationId() {
		t.Fatalf("violation evaluation %q, evaluated at %d", sv.GetEvaluationId(), ei)
	}
	applied := workerApplied(evs)
	if len(applied) != 1 || applied[0].GetToolCallId() != failed.GetToolCallId() || applied[0].GetStepId() != failed.GetStepId() {
		t.Fatalf("worker sandbox.applied = %v", applied)
	}
	sa := applied[0].GetSandboxApplied()
	if sa.GetTarget() != eventsv1.SandboxTarget_SANDBOX_TARGET_TOOL || sa.GetName() != "read_file" ||
		sa.GetNetworkEnforcement() != eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_NOT_APPLICABLE ||
		!slices.Equal(sa.GetProfile().GetReadRoots(), []string{root}) || sa.GetProfile().GetCwd() != root || len(sa.GetEnvAllowlist()) != 0 {
		t.Fatalf("applied = %v", sa)
	}
	if indexOf(evs, func(e *eventsv1.RuntimeEvent) bool { return e == applied[0] }) > vi {
		t.Fatal("sandbox.applied after the violation")
	}
	if strings.Contains(failed.GetToolFailed().GetMessage(), "s3cret") {
		t.Fatal("the secret leaked")
	}
}

// A shell command tries to reach a listener of the test on 127.0.0.1; a
// background process starts too. With isolation (an unprivileged user +
// network namespace) the command cannot connect and sandbox.applied says
// enforced with network none; with it switched off the command connects
// and sandbox.applied says unavailable, network full, and why; with a
// profile that grants the full network it connects and sandbox.applied
// says there was nothing to enforce. Both the call and the process have
// their own sandbox.applied.
func TestShellNetworkIsolation(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("the probe command needs bash (/dev/tcp)")
	}
	for _, tc := range []struct {
		name     string
		disabled bool
		// granted: the session's profile grants the full network.
		granted bool
	}{{"enforced", false, false}, {"unavailable", true, false}, {"granted by the profile", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.disabled {
				if err := exec.Command("unshare", "--user", "--net", "--map-root-user", "/bin/sh", "-c", "exit 0").Run(); err != nil {
					t.Skipf("this host cannot isolate without privileges (%v): the unavailable branch is what it records", err)
				}
			}
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer lis.Close()
			port := lis.Addr().(*net.TCPAddr).Port
			rt := startRuntime(t)
			perm := permissionv1.NewPermissionServiceClient(rt.conn)
			// Bypass: the decision is not what this test is about.
			if _, err := perm.SetPermissionMode(context.Background(), &permissionv1.SetPermissionModeRequest{
				Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_SESSION, SessionId: "s1"},
				Mode:  eventsv1.PermissionMode_PERMISSION_MODE_BYPASS}); err != nil {
				t.Fatal(err)
			}
			if tc.granted {
				if _, err := perm.SetSandboxProfile(context.Background(), &permissionv1.SetSandboxProfileRequest{
					Scope:   &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_SESSION, SessionId: "s1"},
					Profile: &eventsv1.SandboxProfile{Mode: eventsv1.SandboxMode_SANDBOX_MODE_READ_ONLY, Network: eventsv1.NetworkMode_NETWORK_MODE_FULL}}); err != nil {
					t.Fatal(err)
				}
			}
			root := workspace(t)
			rt.startWorker(t, scripted(t, fmt.Sprintf(`
model: scripted
turns:
  - steps:
      - tool_calls:
          - {name: shell, arguments: {command: "bash -c \"echo hi >/dev/tcp/127.0.0.1/%d\" && echo connected || echo no-network", timeout_ms: 20000}}
          - {name: shell, arguments: {command: "sleep 30", background: true}}
      - text: "Checked."
`, port)), root, func(c *worker.Config) { c.DisableNetworkIsolation = tc.disabled })
			tl := rt.follow(t, "s1")
			if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn1", Input: text("check the network")}); err != nil {
				t.Fatal(err)
			}
			tl.until("turn.completed")
			evs := tl.seen
			res := evs[indexOf(evs, func(e *eventsv1.RuntimeEvent) bool { return e.GetType() == "tool.result" })]
			// A connection the command made is in the accept queue by now;
			// the deadline only bounds the wait for none (a deadline
			// already past would not look at the queue).
			_ = lis.(*net.TCPListener).SetDeadline(time.Now().Add(time.Second))
			conn, aerr := lis.Accept()
			if conn != nil {
				conn.Close()
			}
			connected := aerr == nil
			var ne net.Error
			if aerr != nil && !(errors.As(aerr, &ne) && ne.Timeout()) {
				t.Fatal(aerr)
			}
			output := res.GetToolResult().GetPreview()
			open := tc.disabled || tc.granted
			if connected != open || strings.Contains(output, "connected") != open {
				t.Fatalf("connected %v, output %q", connected, output)
			}

			applied := workerApplied(evs)
			if len(applied) != 3 {
				t.Fatalf("worker sandbox.applied: %v", applied)
			}
			started := evs[indexOf(evs, func(e *eventsv1.RuntimeEvent) bool { return e.GetType() == "process.started" })]
			wantEnf, wantNet := eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_ENFORCED, eventsv1.NetworkMode_NETWORK_MODE_NONE
			switch {
			case tc.disabled:
				wantEnf, wantNet = eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_UNAVAILABLE, eventsv1.NetworkMode_NETWORK_MODE_FULL
			case tc.granted:
				wantEnf, wantNet = eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_NOT_APPLICABLE, eventsv1.NetworkMode_NETWORK_MODE_FULL
			}
			for i, a := range applied {
				sa := a.GetSandboxApplied()
				if sa.GetNetworkEnforcement() != wantEnf || sa.GetProfile().GetNetwork() != wantNet || sa.GetNetworkEnforcementReason() == "" {
					t.Fatalf("applied %d = %v", i, sa)
				}
				if tc.disabled && !strings.Contains(sa.GetNetworkEnforcementReason(), "disabled") ||
					tc.granted && !strings.Contains(sa.GetNetworkEnforcementReason(), "grants the full network") {
					t.Fatalf("reason %q", sa.GetNetworkEnforcementReason())
				}
				// Bypass allows the commands: nothing confines their
				// filesystem, and sandbox.applied says so.
				if !slices.Equal(sa.GetEnvAllowlist(), []string{"PATH", "HOME", "LANG", "TERM", "TMPDIR"}) || sa.GetProfile().GetMode() != eventsv1.SandboxMode_SANDBOX_MODE_FULL_ACCESS ||
					len(sa.GetProfile().GetWriteRoots()) != 0 || len(sa.GetProfile().GetReadRoots()) != 0 {
					t.Fatalf("applied %d = %v", i, sa)
				}
			}
			if a := applied[0]; a.GetToolCallId() != res.GetToolCallId() || a.GetSandboxApplied().GetProfile().GetProcessLimits().GetWallTime().AsDuration() != 20*time.Second {
				t.Fatalf("the foreground call's applied = %v", a)
			}
			// The background call, then its process (by process id), before
			// process.started.
			proc := applied[2]
			if proc.GetSandboxApplied().GetTarget() != eventsv1.SandboxTarget_SANDBOX_TARGET_PROCESS || proc.GetProcessId() != started.GetProcessId() ||
				proc.GetSandboxApplied().GetName() != "sleep 30" || indexOf(evs, func(e *eventsv1.RuntimeEvent) bool { return e == proc }) > indexOf(evs, func(e *eventsv1.RuntimeEvent) bool { return e == started }) {
				t.Fatalf("the process's applied = %v (started %v)", proc, started)
			}
		})
	}
}
