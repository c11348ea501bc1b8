package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/worker"
	"github.com/agentruntime/agentruntime/pkg/worker/confine"
)

// onRequestWorkspaceWrite makes session s1 run commands that change the
// workspace sandboxed without asking (on_request), under a profile whose
// one write root is root.
func onRequestWorkspaceWrite(t *testing.T, rt *runtime, root string) {
	t.Helper()
	perm := permissionv1.NewPermissionServiceClient(rt.conn)
	scope := &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_SESSION, SessionId: "s1"}
	if _, err := perm.SetPermissionMode(context.Background(), &permissionv1.SetPermissionModeRequest{Scope: scope,
		Mode: eventsv1.PermissionMode_PERMISSION_MODE_ON_REQUEST, Interactive: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := perm.SetSandboxProfile(context.Background(), &permissionv1.SetSandboxProfileRequest{Scope: scope,
		Profile: &eventsv1.SandboxProfile{Mode: eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE, WriteRoots: []string{root},
			Network: eventsv1.NetworkMode_NETWORK_MODE_NONE}}); err != nil {
		t.Fatal(err)
	}
}

// pwnScript writes a script into the workspace that tries to write and
// read outside it, directly and from a child it starts in the
// background, and writes inside it. The permission service cannot see
// into the script: `sh ./pwn.sh` changes the workspace at most, so
// on_request runs it sandboxed.
func pwnScript(t *testing.T, root, outside string) {
	t.Helper()
	script := fmt.Sprintf(`echo inside > made
echo pwned > %[1]s/x
cat %[1]s/secret
/bin/sh -c 'echo pwned > %[1]s/child' &
wait $!
echo "child exit $?" >> made
`, outside)
	if err := os.WriteFile(filepath.Join(root, "pwn.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func notExist(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s exists (%v)", p, err)
		}
	}
}

// A shell command the permission service runs sandboxed (on_request, a
// workspace-write profile) runs confined by Landlock: its writes outside
// the write root fail and leave nothing, a child it starts is confined
// too, it cannot read outside its roots, and it writes inside the root.
// The same holds for a background process. sandbox.applied says the
// profile that was enforced.
func TestSandboxedShellIsConfinedToTheProfile(t *testing.T) {
	if c := confine.Probe(); !c.Available {
		if c.ABI == 0 {
			t.Skipf("this kernel cannot confine with Landlock: %s", c.Reason)
		}
		t.Fatalf("Landlock ABI %d but no confinement: %s", c.ABI, c.Reason)
	}
	rt := startRuntime(t)
	root, outside := workspace(t), t.TempDir()
	pwnScript(t, root, outside)
	if err := os.Mkdir(filepath.Join(root, "bg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bg", "pwn.sh"), []byte(
		"echo bg-inside > made\necho pwned > "+outside+"/bg\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	onRequestWorkspaceWrite(t, rt, root)
	rt.startWorker(t, scripted(t, `
model: scripted
turns:
  - steps:
      - tool_calls: [{name: shell, arguments: {command: "sh ./pwn.sh", timeout_ms: 20000}}]
      - tool_calls: [{name: shell, arguments: {command: "sh ./pwn.sh", cwd: bg, background: true}}]
      - tool_calls: [{name: process_wait, arguments: {timeout_ms: 20000}}]
      - text: "Done."
`), root)
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn1", Input: text("run the scripts")}); err != nil {
		t.Fatal(err)
	}
	tl.until("turn.completed")
	evs := tl.seen
	for _, e := range evs {
		if e.GetType() == "action.required" {
			t.Fatalf("the sandboxed command asked: %v", e)
		}
		if strings.Contains(e.GetToolResult().GetPreview()+e.GetToolFailed().GetMessage(), "s3cret") {
			t.Fatalf("the secret was read: %v", e)
		}
	}
	notExist(t, filepath.Join(outside, "x"), filepath.Join(outside, "child"), filepath.Join(outside, "bg"))
	if b, _ := os.ReadFile(filepath.Join(root, "made")); !strings.HasPrefix(string(b), "inside\nchild exit ") || strings.HasSuffix(string(b), "exit 0\n") {
		t.Fatalf("made = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "bg", "made")); string(b) != "bg-inside\n" {
		t.Fatalf("bg/made = %q", b)
	}
	evaluated := 0
	for _, e := range evs {
		if e.GetType() == "permission.evaluated" && e.GetPermissionEvaluated().GetName() == "shell" {
			evaluated++
			if d := e.GetPermissionEvaluated().GetDecision(); d != eventsv1.Decision_DECISION_SANDBOXED {
				t.Fatalf("decision %v", d)
			}
		}
	}
	applied := slices.DeleteFunc(workerApplied(evs), func(e *eventsv1.RuntimeEvent) bool { return e.GetSandboxApplied().GetName() == "process_wait" })
	if evaluated != 2 || len(applied) != 3 {
		t.Fatalf("%d shell evaluations, worker sandbox.applied %v", evaluated, applied)
	}
	for i, a := range applied {
		p := a.GetSandboxApplied().GetProfile()
		wantRead := root
		if i > 0 {
			wantRead = filepath.Join(root, "bg")
		}
		if p.GetMode() != eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE || !slices.Equal(p.GetWriteRoots(), []string{root}) ||
			!slices.Equal(p.GetReadRoots(), []string{wantRead}) {
			t.Fatalf("applied %d = %v", i, a.GetSandboxApplied())
		}
	}
}

// A worker that cannot confine (here switched off, as on a host without
// Landlock) does not run a command the permission service would run
// sandboxed: it asks a person, and a denial leaves nothing written.
func TestUnconfinableSandboxedShellAsks(t *testing.T) {
	rt := startRuntime(t)
	root, outside := workspace(t), t.TempDir()
	pwnScript(t, root, outside)
	onRequestWorkspaceWrite(t, rt, root)
	rt.startWorker(t, scripted(t, `
model: scripted
turns:
  - steps:
      - tool_calls: [{name: shell, arguments: {command: "sh ./pwn.sh", timeout_ms: 20000}}]
      - text: "Done."
`), root, func(c *worker.Config) { c.DisableConfinement = true })
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn1", Input: text("run the script")}); err != nil {
		t.Fatal(err)
	}
	req := tl.until("action.required")
	if ar := req.GetActionRequired(); !strings.Contains(ar.GetPrompt(), "cannot confine") || req.GetToolCallId() == "" {
		t.Fatalf("action.required = %v", req)
	}
	ei := indexOf(tl.seen, func(e *eventsv1.RuntimeEvent) bool { return e.GetType() == "permission.evaluated" })
	if ei < 0 || tl.seen[ei].GetPermissionEvaluated().GetDecision() != eventsv1.Decision_DECISION_SANDBOXED {
		t.Fatalf("evaluated at %d in %v", ei, tl.seen)
	}
	notExist(t, filepath.Join(root, "made"), filepath.Join(outside, "x"))
	respond(t, rt, req.GetActionId(), "deny")
	if f := tl.until("tool.failed"); f.GetToolFailed().GetCategory() != "permission_denied" {
		t.Fatalf("tool.failed = %v", f)
	}
	tl.until("turn.completed")
	notExist(t, filepath.Join(root, "made"), filepath.Join(outside, "x"), filepath.Join(outside, "child"))
	if len(workerApplied(tl.seen)) != 0 {
		t.Fatalf("a denied call was applied: %v", workerApplied(tl.seen))
	}
}
