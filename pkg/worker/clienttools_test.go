package worker_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/clienttool"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker"
)

// clientScript: "what time" calls the client's tool browser_time, then
// answers; anything else answers at once.
const clientScript = `
model: scripted
turns:
  - match: what time
    steps:
      - tool_calls: [{name: browser_time, arguments: {zone: UTC}}]
      - text: it is late
  - steps:
      - text: hello at once
`

// A call to a client tool is not run by the worker: it opens a
// client_tool action carrying the call and the turn is handed back (no
// slot held: another turn completes meanwhile on a one-slot worker). The
// answer's payload resumes it, a worker gives it to the model as the
// tool's result, and the turn completes; a repeated answer changes
// nothing.
func TestAClientToolCallParksUntilItsResultIsGiven(t *testing.T) {
	rt := startRuntime(t)
	root := workspace(t)
	model := &recording{Provider: scripted(t, clientScript)}
	rt.startStoppableWorker(t, "w1", root, func(c *worker.Config) { c.MaxTurns = 1; c.Provider = model })
	tl := rt.follow(t, "s1")
	ctx := context.Background()
	offered, err := clienttool.Encode([]clienttool.Tool{{Name: "browser_time", Description: "The time in the user's browser",
		Parameters: []byte(`{"type":"object","properties":{"zone":{"type":"string"}}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn-c",
		Input: text("what time is it?"), Options: map[string]string{clienttool.Option: offered}}); err != nil {
		t.Fatal(err)
	}
	req := tl.until("action.required")
	ar := req.GetActionRequired()
	started := tl.seen[slices.IndexFunc(tl.seen, func(ev *eventsv1.RuntimeEvent) bool { return ev.GetType() == "tool.started" })]
	if ar.GetActionType() != clienttool.ActionType || ar.GetContext()[clienttool.ContextTool] != "browser_time" ||
		ar.GetContext()[clienttool.ContextArguments] != `{"zone":"UTC"}` || req.GetToolCallId() != started.GetToolCallId() ||
		started.GetToolStarted().GetToolName() != "browser_time" {
		t.Fatalf("action.required = %v for tool.started %v, want a client_tool action carrying the call", req, started)
	}
	for tl.until("run.status").GetRunStatus().GetPhase() != "parked" {
	}
	// The parked turn holds no slot of the one-slot worker.
	rt.submit(t, "other", "turn-quick", "hello")
	if end := tl.untilTurnEnds("turn-quick"); end.GetType() != "turn.completed" {
		t.Fatalf("the turn beside the parked one ended %v", end)
	}
	// An answer that is not the result text the action asks for is refused.
	if _, err := rt.control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: req.GetActionId(), Decision: clienttool.Decision, PayloadJson: `{"time":1}`}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a payload that is not a string: %v, want InvalidArgument", err)
	}
	answer := &controlv1.RespondActionRequest{ActionId: req.GetActionId(), Decision: clienttool.Decision, PayloadJson: `"23:59 UTC"`}
	if _, err := rt.control.RespondAction(ctx, answer); err != nil {
		t.Fatal(err)
	}
	end := tl.untilTurnEnds("turn-c")
	if end.GetType() != "turn.completed" || end.GetTurnCompleted().GetSummary() != "it is late" {
		t.Fatalf("the turn ended %v after %v", end, testkit.Types(tl.seen))
	}
	if again, err := rt.control.RespondAction(ctx, answer); err != nil || !again.GetAlreadyResolved() {
		t.Fatalf("a repeated answer = %v, %v; want the first answer back", again, err)
	}
	var results []string
	for _, ev := range tl.seen {
		if ev.GetTurnId() == "turn-c" && ev.GetType() == "tool.result" {
			if ev.GetToolCallId() != started.GetToolCallId() {
				t.Fatalf("tool.result %v is not for the client's call %s", ev, started.GetToolCallId())
			}
			results = append(results, ev.GetToolResult().GetPreview())
		}
	}
	if !slices.Equal(results, []string{"23:59 UTC"}) {
		t.Fatalf("tool.result previews %q, want the client's answer once", results)
	}
	if got := model.toolMessages(); !slices.Equal(got, []string{"23:59 UTC"}) {
		t.Fatalf("the model's tool results %q, want the client's answer", got)
	}
	var sawTool bool
	model.mu.Lock()
	defer model.mu.Unlock()
	for _, r := range model.reqs {
		for _, tool := range r.Tools {
			sawTool = sawTool || tool.Name == "browser_time" && tool.Schema == `{"type":"object","properties":{"zone":{"type":"string"}}}`
		}
	}
	if !sawTool {
		t.Fatal("the model was never offered the client tool")
	}
	at, err := rt.control.GetTurnAttempts(ctx, &controlv1.GetTurnAttemptsRequest{TurnId: "turn-c", MinSequence: end.GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	if runs := at.GetAttempts().GetAttempts(); len(runs) < 2 || runs[0].GetStatus() != controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_PARKED {
		t.Fatalf("runs %v, want the first parked and a later one completing the turn", runs)
	}
}

// A client tool list the worker could not offer is refused at submit,
// naming the field.
func TestBadClientToolsAreRefusedAtSubmit(t *testing.T) {
	rt := startRuntime(t)
	for raw, field := range map[string]string{
		`{"name":"x"}`:                             "options[client_tools]",
		`[{"name":"a b"}]`:                         "options[client_tools][0].name",
		`[{"name":"a"},{"name":"a"}]`:              "options[client_tools][1].name",
		`[{"name":"a","parameters":"not schema"}]`: "options[client_tools][0].parameters",
	} {
		_, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main",
			Input: text("hi"), Options: map[string]string{clienttool.Option: raw}})
		st := status.Convert(err)
		var got []string
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok {
				for _, v := range br.GetFieldViolations() {
					got = append(got, v.GetField())
				}
			}
		}
		if st.Code() != codes.InvalidArgument || !slices.Equal(got, []string{field}) {
			t.Errorf("%s: %v %v, want InvalidArgument naming %s", raw, st.Code(), got, field)
		}
	}
}
