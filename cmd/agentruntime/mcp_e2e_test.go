package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/mcpservers"
)

// mcpScript drives the MCP turns: each calls a tool of the everything
// server, then answers.
const mcpScript = `model: scripted
turns:
  - match: "echo"
    steps:
      - tool_calls: [{name: mcp__everything__echo, arguments: {message: "hello through MCP"}}]
      - text: "The server echoed."
  - match: "slow"
    steps:
      - tool_calls: [{name: mcp__everything__trigger-long-running-operation, arguments: {duration: 60, steps: 60}}]
      - text: "The slow call ended."
  - match: ""
    steps:
      - text: "Nothing to call."
`

// The acceptance of MCP in the worker, on the real binary with the real
// server-everything: `agentruntime dev --mcp-config` offers its tools
// (listed in tool.catalog.resolved); a call to mcp__everything__echo is
// evaluated by the permission service (asked, as every tool of a server no
// rule names) and, approved, records tool.result with the echoed text.
// With a rule allowing the server's tools, a call runs at once; the server
// killed mid-call fails it with a category, the turn that starts while it
// is down is told (context.resolved warnings) and is not offered its
// tools, and once the server is back the next call works.
func TestDevRunsMCPServerToolsThroughPermission(t *testing.T) {
	bin := mcpservers.Bin(t, mcpservers.Everything)
	dir, ws := t.TempDir(), t.TempDir()
	line := fmt.Sprintf(`if [ -e %q ]; then echo blocked by the test >&2; exit 3; fi; echo $$ > %q; tee -a %q | exec %q stdio`,
		filepath.Join(dir, "block"), filepath.Join(dir, "pid"), filepath.Join(dir, "requests"), bin)
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": "/bin/sh", "args": []string{"-c", line}}}})
	cfgPath, scriptPath := filepath.Join(dir, "mcp.json"), filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(scriptPath, []byte(mcpScript), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--workspace", ws, "--script", scriptPath, "--mcp-config", cfgPath)
	if !strings.Contains(dev.Output(), "MCP servers: everything running (") {
		t.Fatalf("the banner does not say the MCP server runs:\n%s", dev.Output())
	}
	conn := dial(t, dev.Addr)
	control := controlv1.NewControlServiceClient(conn)
	ctx, cancel := context.WithTimeout(testkit.Context(t), 120*time.Second)
	defer cancel()
	stream, err := control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
		SessionId: "mcp", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1,
		TypePrefixes: []string{"turn.", "tool.", "permission.evaluated", "sandbox.applied", "action.required", "context.resolved"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	next := func(typ string) *eventsv1.RuntimeEvent {
		t.Helper()
		for {
			m, err := stream.Recv()
			if err != nil {
				t.Fatalf("waiting for %s: %v (saw %v)\n%s", typ, err, seen, dev.Output())
			}
			if ev := m.GetEvent(); ev != nil {
				seen = append(seen, ev.GetType())
				if ev.GetType() == typ {
					return ev
				}
			}
		}
	}
	submit := func(text string) {
		t.Helper()
		if _, err := control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "mcp", ThreadId: "main",
			Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: text}}}}); err != nil {
			t.Fatal(err)
		}
	}

	// 1. No rule names the server: the call is asked, then approved.
	submit("echo something")
	catalog := next("tool.catalog.resolved").GetToolCatalogResolved().GetToolNames()
	for _, want := range []string{"mcp__everything__echo", "mcp__everything__get-sum", "mcp__everything__trigger-long-running-operation", "read_file"} {
		if !slices.Contains(catalog, want) {
			t.Fatalf("the catalog %v does not list %s", catalog, want)
		}
	}
	eval := next("permission.evaluated").GetPermissionEvaluated()
	if eval.GetName() != "mcp__everything__echo" || eval.GetDecision() != eventsv1.Decision_DECISION_ASK {
		t.Fatalf("permission.evaluated = %v, want an ask for mcp__everything__echo", eval)
	}
	asked := next("action.required")
	if _, err := control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: asked.GetActionId(), Decision: "allow_once"}); err != nil {
		t.Fatal(err)
	}
	res := next("tool.result")
	if !strings.Contains(res.GetToolResult().GetPreview(), "hello through MCP") {
		t.Fatalf("tool.result = %v, want the echoed text", res.GetToolResult())
	}
	next("turn.completed")

	// 2. A rule allows the server's tools: the call runs at once; the
	// server is killed under it and blocked from starting again.
	_, err = permissionv1.NewPermissionServiceClient(conn).PutRules(ctx, &permissionv1.PutRulesRequest{
		Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT},
		Rules: []*eventsv1.PermissionRule{{RuleId: "mcp-everything", Effect: eventsv1.RuleEffect_RULE_EFFECT_ALLOW, Tool: "mcp__everything__*"}}})
	if err != nil {
		t.Fatal(err)
	}
	submit("slow please")
	if eval := next("permission.evaluated").GetPermissionEvaluated(); eval.GetDecision() != eventsv1.Decision_DECISION_ALLOW {
		t.Fatalf("permission.evaluated = %v, want allowed by the rule", eval)
	}
	// The server is not confined by the worker's sandbox, and the record
	// says so.
	a := next("sandbox.applied").GetSandboxApplied()
	for a.GetNetworkEnforcement() == eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_UNSPECIFIED { // the decision's own record
		a = next("sandbox.applied").GetSandboxApplied()
	}
	if a.GetProfile().GetMode() != eventsv1.SandboxMode_SANDBOX_MODE_FULL_ACCESS ||
		!strings.Contains(a.GetNetworkEnforcementReason(), "MCP server") {
		t.Fatalf("sandbox.applied = %v, want full access outside the sandbox", a)
	}
	testkit.Eventually(t, "the slow call reached the server", func() bool {
		raw, _ := os.ReadFile(filepath.Join(dir, "requests"))
		return strings.Contains(string(raw), "trigger-long-running-operation")
	})
	raw, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "block"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	failed := next("tool.failed")
	if f := failed.GetToolFailed(); f.GetCategory() != "mcp_server_exited" || !strings.Contains(f.GetMessage(), "everything") {
		t.Fatalf("tool.failed = %v, want mcp_server_exited", f)
	}
	next("turn.completed")

	// 3. While it cannot start, the worker's inventory drops its tools and
	// a turn is told.
	inventoryHasEcho := func() bool {
		inv, err := control.GetToolInventory(ctx, &controlv1.GetToolInventoryRequest{})
		return err == nil && slices.ContainsFunc(inv.GetTools(), func(s *eventsv1.ToolSpec) bool { return s.GetName() == "mcp__everything__echo" })
	}
	testkit.Eventually(t, "the inventory drops the down server's tools", func() bool { return !inventoryHasEcho() })
	submit("anything")
	resolved := next("context.resolved").GetContextResolved()
	if !slices.ContainsFunc(resolved.GetWarnings(), func(w string) bool {
		return strings.Contains(w, "mcp__everything__*") && strings.Contains(w, "unavailable")
	}) {
		t.Fatalf("context.resolved warnings %v do not tell of the down server", resolved.GetWarnings())
	}
	if names := next("tool.catalog.resolved").GetToolCatalogResolved().GetToolNames(); slices.Contains(names, "mcp__everything__echo") {
		t.Fatalf("a down server's tools are offered: %v", names)
	}
	next("turn.completed")

	// 4. It comes back: the next call works.
	if err := os.Remove(filepath.Join(dir, "block")); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the inventory lists the server's tools again", inventoryHasEcho)
	submit("echo again")
	res = next("tool.result")
	if !strings.Contains(res.GetToolResult().GetPreview(), "hello through MCP") {
		t.Fatalf("tool.result after the restart = %v", res.GetToolResult())
	}
	next("turn.completed")
}

// A config that is not one stops dev before it serves, naming the field.
func TestDevRefusesABadMCPConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"bad__name": {"command": "x"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--mcp-config", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--mcp-config") || !strings.Contains(string(out), "mcpServers.bad__name") {
		t.Fatalf("dev with a bad MCP config: %v\n%s", err, out)
	}
}
