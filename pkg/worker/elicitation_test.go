package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/mcpservers"
	"github.com/agentruntime/agentruntime/pkg/worker"
	"github.com/agentruntime/agentruntime/pkg/worker/mcp"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// elicitScript: every turn calls server-everything's tool that asks the
// user for input (elicitation/create), then answers.
const elicitScript = `
model: scripted
turns:
  - steps:
      - tool_calls: [{name: mcp__everything__trigger-elicitation-request, arguments: {}}]
      - text: asked
`

const elicitTool = "mcp__everything__trigger-elicitation-request"

// startEverything runs server-everything for a worker, under sh copying
// what the worker sends it to the returned file, with a rule allowing its
// tools; it waits until its elicitation tool (offered only to a client
// that declares elicitation) is listed.
func startEverything(t *testing.T, rt *runtime, opts mcp.Options) (*mcp.Manager, string) {
	t.Helper()
	bin := mcpservers.Bin(t, mcpservers.Everything)
	dir := t.TempDir()
	requests := filepath.Join(dir, "requests")
	line := fmt.Sprintf(`tee -a %q | exec %q stdio`, requests, bin)
	opts.Dir = dir
	m := mcp.Start(context.Background(), mcp.Config{Servers: map[string]mcp.ServerConfig{"everything": {Type: mcp.TypeStdio, Command: "/bin/sh", Args: []string{"-c", line}}}}, opts)
	t.Cleanup(m.Close)
	testkit.Eventually(t, "the elicitation tool is listed", func() bool {
		return slices.ContainsFunc(m.Tools(), func(tl tools.Tool) bool { return tl.Spec().Name == elicitTool })
	})
	_, err := permissionv1.NewPermissionServiceClient(rt.conn).PutRules(context.Background(), &permissionv1.PutRulesRequest{
		Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT},
		Rules: []*eventsv1.PermissionRule{{RuleId: "mcp-everything", Effect: eventsv1.RuleEffect_RULE_EFFECT_ALLOW, Tool: "mcp__everything__*"}}})
	if err != nil {
		t.Fatal(err)
	}
	return m, requests
}

// The server's elicitation during a call is an action of type elicitation
// on the turn: its prompt says which server asks and carries its message,
// its schema is the server's (taking null for a decline), its decisions
// are the MCP answers, and a timeout declines. The person's accept, with a
// payload control checked against the schema, is what the server gets:
// the tool's result carries the answer. A decline needs no payload and is
// declined to the server. An interrupted turn answers the server cancel.
func TestAnMCPElicitationIsAskedOfAPersonAsAnAction(t *testing.T) {
	rt := startRuntime(t)
	m, requests := startEverything(t, rt, mcp.Options{})
	model := &recording{Provider: scripted(t, elicitScript)}
	rt.startWorker(t, model, workspace(t), func(c *worker.Config) { c.ToolSource = m })
	tl := rt.follow(t, "s1")
	ctx := testkit.Context(t)

	rt.submit(t, "main", "turn-accept", "fill the form")
	req := tl.until("action.required")
	ar := req.GetActionRequired()
	if ar.GetActionType() != worker.ElicitationActionType || !slices.Equal(ar.GetDecisions(), worker.ElicitationDecisions) ||
		ar.GetDecisionOnTimeout() != mcp.ElicitDecline || ar.GetExpiresAt() == nil {
		t.Fatalf("action.required = %v, want an elicitation with accept, decline, cancel and a timeout declining", req)
	}
	if !strings.HasPrefix(ar.GetPrompt(), `The MCP server "everything" asks, during its tool `+elicitTool) ||
		!strings.Contains(ar.GetPrompt(), "Please provide inputs for the following fields:") {
		t.Fatalf("prompt %q: want the server named before its message", ar.GetPrompt())
	}
	started := slices.IndexFunc(tl.seen, func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetType() == "tool.started" && ev.GetToolCallId() == req.GetToolCallId()
	})
	if started < 0 || req.GetStepId() == "" {
		t.Fatalf("no tool.started of the call %q before its action (%v)", req.GetToolCallId(), testkit.Types(tl.seen))
	}
	if c := ar.GetContext(); c[worker.ElicitationContextServer] != "everything" || c[worker.ElicitationContextTool] != elicitTool ||
		c[worker.ElicitationContextCall] != req.GetToolCallId() || req.GetToolCallId() == "" {
		t.Fatalf("context %v, tool_call_id %q: want the server, the tool and the call", c, req.GetToolCallId())
	}
	var schema struct {
		Type       []string                   `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal([]byte(ar.GetJsonSchema()), &schema); err != nil || schema.Properties["name"] == nil ||
		schema.Properties["untitledSingleSelectEnum"] == nil || !slices.Equal(schema.Required, []string{"name"}) ||
		!slices.Equal(schema.Type, []string{"object", "null"}) {
		t.Fatalf("json_schema %s (%v): want the server's requested schema, taking null", ar.GetJsonSchema(), err)
	}
	// Control holds the answer to the server's schema.
	if _, err := rt.control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: req.GetActionId(), Decision: mcp.ElicitAccept,
		PayloadJson: `{"name":42}`}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "payload_json") {
		t.Fatalf("a payload the schema refuses: %v, want InvalidArgument on payload_json", err)
	}
	if _, err := rt.control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: req.GetActionId(), Decision: mcp.ElicitAccept,
		PayloadJson: `{"name":"Ada Lovelace","check":true,"integer":7}`}); err != nil {
		t.Fatal(err)
	}
	res := tl.until("tool.result").GetToolResult().GetPreview()
	for _, want := range []string{"User provided the requested information", "Name: Ada Lovelace", "Agreed to terms: true", "Favorite Integer: 7"} {
		if !strings.Contains(res, want) {
			t.Fatalf("tool.result %q lacks %q", res, want)
		}
	}
	if end := tl.untilTurnEnds("turn-accept"); end.GetType() != "turn.completed" {
		t.Fatalf("the turn ended %v", end)
	}
	if got := model.toolMessages(); len(got) != 1 || !strings.Contains(got[0], "Name: Ada Lovelace") {
		t.Fatalf("the model's tool results %q, want the server's result with the answer", got)
	}

	// A decline, without a payload.
	rt.submit(t, "main", "turn-decline", "fill it again")
	req = tl.until("action.required")
	respond(t, rt, req.GetActionId(), mcp.ElicitDecline)
	if res := tl.until("tool.result").GetToolResult().GetPreview(); !strings.Contains(res, "User declined") {
		t.Fatalf("tool.result %q, want the server told of the decline", res)
	}
	tl.untilTurnEnds("turn-decline")

	// Interrupted while the person is asked: the server is answered
	// cancel, the turn ends.
	rt.submit(t, "main", "turn-stop", "and again")
	req = tl.until("action.required")
	if _, err := rt.control.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn-stop", Reason: "never mind"}); err != nil {
		t.Fatal(err)
	}
	if end := tl.untilTurnEnds("turn-stop"); end.GetTurnFailed().GetCategory() != "interrupted" {
		t.Fatalf("the interrupted turn ended %v", end)
	}
	testkit.Eventually(t, "the server was answered cancel", func() bool {
		raw, _ := os.ReadFile(requests)
		return strings.Contains(string(raw), `"action":"cancel"`)
	})
	if n := tl.count("turn-stop", "action.resolved"); n != 1 {
		t.Fatalf("%d action.resolved for the interrupted turn, want its elicitation's", n)
	}
}

// Nobody answers within the elicitation's timeout: the action resolves
// timed out with decline, and the server is told the user declined.
func TestAnMCPElicitationNobodyAnswersIsDeclined(t *testing.T) {
	rt := startRuntime(t)
	m, _ := startEverything(t, rt, mcp.Options{ElicitationTimeout: 300 * time.Millisecond})
	rt.startWorker(t, scripted(t, elicitScript), workspace(t), func(c *worker.Config) { c.ToolSource = m })
	tl := rt.follow(t, "s1")
	rt.submit(t, "main", "turn-late", "fill the form")
	tl.until("action.required")
	resolved := tl.until("action.resolved").GetActionResolved()
	if resolved.GetOutcome() != eventsv1.ActionOutcome_ACTION_OUTCOME_TIMED_OUT || resolved.GetDecision() != mcp.ElicitDecline {
		t.Fatalf("action.resolved = %v, want timed out with decline", resolved)
	}
	if res := tl.until("tool.result").GetToolResult().GetPreview(); !strings.Contains(res, "User declined") {
		t.Fatalf("tool.result %q, want the server told of the decline", res)
	}
	if end := tl.untilTurnEnds("turn-late"); end.GetType() != "turn.completed" {
		t.Fatalf("the turn ended %v", end)
	}
}
