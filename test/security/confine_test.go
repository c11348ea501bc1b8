package security

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/stretchr/testify/require"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit/binproc"
)

// startConfinedDev starts dev like startDev, skipping (saying why) only
// on a kernel without Landlock; on one with it, dev's banner must say
// its worker confines shell commands.
func startConfinedDev(t *testing.T, ws string, args ...string) *binproc.Proc {
	t.Helper()
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		t.Skipf("this kernel has no Landlock (ABI %d, %v): shell commands cannot be confined here", abi, err)
	}
	dev := startDev(t, ws, args...)
	if !strings.Contains(dev.Output(), "sandbox    shell commands run sandboxed are confined: Landlock ABI") {
		t.Fatalf("Landlock ABI %d, but dev's banner does not say its worker confines:\n%s", abi, dev.Output())
	}
	return dev
}

// neverAsks fails the test at an action.required: the command must run
// sandboxed without asking.
func neverAsks(t *testing.T) func(*eventsv1.RuntimeEvent) {
	return func(ev *eventsv1.RuntimeEvent) {
		if ev.GetType() == "action.required" {
			t.Fatalf("asked: %v", ev)
		}
	}
}

// shellOutcome is the one shell call's evaluation decision, the worker's
// sandbox.applied profile and its tool.result or tool.failed.
func shellOutcome(t *testing.T, events []*eventsv1.RuntimeEvent) (eventsv1.Decision, *eventsv1.SandboxProfile, *eventsv1.RuntimeEvent) {
	t.Helper()
	var decision eventsv1.Decision
	var profile *eventsv1.SandboxProfile
	var end *eventsv1.RuntimeEvent
	for _, ev := range events {
		switch {
		case ev.GetType() == "permission.evaluated" && ev.GetPermissionEvaluated().GetName() == "shell":
			decision = ev.GetPermissionEvaluated().GetDecision()
		case ev.GetType() == "sandbox.applied" && ev.GetSandboxApplied().GetName() == "shell" &&
			ev.GetSandboxApplied().GetNetworkEnforcement() != eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_UNSPECIFIED:
			profile = ev.GetSandboxApplied().GetProfile()
		case ev.GetType() == "tool.result" || ev.GetType() == "tool.failed":
			end = ev
		}
	}
	if profile == nil || end == nil {
		t.Fatalf("no worker sandbox.applied or end of the shell call in %d events", len(events))
	}
	return decision, profile, end
}

// A repository that runs a program of its own when git reads it: its
// .git/config sets core.fsmonitor, which `git status` runs. The
// classifier judges `git status` read-only (the permission service does
// not read the repository's configuration), so under the default policy
// dev's worker runs it sandboxed without asking. Confined to the
// workspace, read-only, the hook's write outside fails: the file does
// not appear, and the worker's sandbox.applied says read-only with the
// workspace as its one read root.
func TestReadOnlyGitCannotWriteOutsideThroughTheRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ws, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "pwned")
	setup := exec.Command("sh", "-c", `git init -q . && echo hi > a && git add a &&
git -c user.email=a@b -c user.name=n commit -qm first &&
git config core.fsmonitor "echo pwned > `+victim+`; false"`)
	setup.Dir = ws
	if out, err := setup.CombinedOutput(); err != nil {
		t.Fatalf("%s (%v)", out, err)
	}
	dev := startConfinedDev(t, ws, "--script", writeScript(t, `model: scripted
turns:
  - steps:
      - tool_calls: [{name: shell, arguments: {command: "git status"}}]
      - text: "Done."
`))
	runCLI(t, "submit", "--addr", dev.Addr, "what is the status?")
	events := filesWatchTurn(t, dev.Addr, neverAsks(t))
	if _, err := os.Lstat(victim); !os.IsNotExist(err) {
		t.Fatalf("%s exists: the repository's hook wrote outside (%v)", victim, err)
	}
	decision, profile, _ := shellOutcome(t, events)
	if decision != eventsv1.Decision_DECISION_SANDBOXED || profile.GetMode() != eventsv1.SandboxMode_SANDBOX_MODE_READ_ONLY ||
		!slices.Equal(profile.GetReadRoots(), []string{ws}) || len(profile.GetWriteRoots()) != 0 {
		t.Fatalf("decision %v, applied %v", decision, profile)
	}
}

// on_request runs a command that may change the workspace sandboxed
// without asking. With a workspace-write profile, the model runs a
// script of the workspace (`sh ./pwn.sh`: the permission service cannot
// see into it) that writes inside, writes outside directly and from a
// child it starts, and reads a secret outside: only the write inside
// happens.
func TestOnRequestSandboxedCommandCannotWriteOutside(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("echo inside > made\necho pwned > %[1]s/x\n/bin/sh -c 'echo pwned > %[1]s/child' &\nwait $!\ncat %[1]s/secret\n", outside)
	if err := os.WriteFile(filepath.Join(ws, "pwn.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := startConfinedDev(t, ws, "--script", writeScript(t, `model: scripted
turns:
  - steps:
      - tool_calls: [{name: shell, arguments: {command: "sh ./pwn.sh"}}]
      - text: "Done."
`))
	for path, body := range map[string]string{
		"SetPermissionMode": `{"scope":{"level":"POLICY_LEVEL_TENANT"},"mode":"PERMISSION_MODE_ON_REQUEST","interactive":true}`,
		"SetSandboxProfile": `{"scope":{"level":"POLICY_LEVEL_TENANT"},"profile":{"mode":"SANDBOX_MODE_WORKSPACE_WRITE","writeRoots":["` + ws + `"],"network":"NETWORK_MODE_NONE"}}`,
	} {
		code, resp := send(t, dev.Addr, request{path: "/agentruntime.permission.v1.PermissionService/" + path, body: []byte(body)})
		require.Equal(t, http.StatusOK, code, resp)
	}
	runCLI(t, "submit", "--addr", dev.Addr, "run the script")
	events := filesWatchTurn(t, dev.Addr, neverAsks(t))
	for _, p := range []string{filepath.Join(outside, "x"), filepath.Join(outside, "child")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s exists (%v)", p, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "made")); err != nil || string(b) != "inside\n" {
		t.Fatalf("made = %q (%v)", b, err)
	}
	decision, profile, end := shellOutcome(t, events)
	if strings.Contains(end.GetToolResult().GetPreview()+end.GetToolFailed().GetMessage(), "s3cret") {
		t.Fatalf("the secret was read: %v", end)
	}
	if decision != eventsv1.Decision_DECISION_SANDBOXED || profile.GetMode() != eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE ||
		!slices.Equal(profile.GetWriteRoots(), []string{ws}) {
		t.Fatalf("decision %v, applied %v", decision, profile)
	}
}
