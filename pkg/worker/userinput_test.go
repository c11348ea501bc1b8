package worker_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker"
)

// inputScript: "colour" asks a free question, "pick" one with choices,
// "late" one that times out after 300 ms; anything else answers at once.
const inputScript = `
model: scripted
turns:
  - match: colour
    steps:
      - tool_calls: [{name: request_user_input, arguments: {question: "Which colour?"}}]
      - text: noted
  - match: pick
    steps:
      - tool_calls: [{name: request_user_input, arguments: {question: "Red or blue?", choices: [red, blue]}}]
      - text: picked
  - match: late
    steps:
      - tool_calls: [{name: request_user_input, arguments: {question: "Anyone there?", timeout_ms: 300}}]
      - text: nobody came
  - match: badly
    steps:
      - tool_calls:
          - {name: request_user_input, arguments: {question: "  "}}
          - {name: request_user_input, arguments: {question: "Which?", choices: [a, a]}}
          - {name: request_user_input, arguments: {question: "Which?", choices: [no_answer]}}
          - {name: request_user_input, arguments: {question: "Which?", timeout_ms: 999999999999}}
          - {name: request_user_input, arguments: {question: "Which?", colour: red}}
      - text: gave up
  - steps:
      - text: hello at once
`

// askUntilParked submits a turn whose model asks the user, and returns
// the input action once the turn is handed back.
func askUntilParked(t *testing.T, rt *runtime, tl *timeline, thread, turn, input string) *eventsv1.RuntimeEvent {
	t.Helper()
	rt.submit(t, thread, turn, input)
	req := tl.until("action.required")
	for tl.until("run.status").GetRunStatus().GetPhase() != "parked" {
	}
	for _, ev := range tl.seen {
		if ev.GetTurnId() == turn && ev.GetType() == "action.required" && ev.GetActionRequired().GetActionType() != worker.InputActionType {
			t.Fatalf("the question asked for an approval first: %v", ev)
		}
	}
	return req
}

// The model calls request_user_input: the question is an action of type
// input (its prompt, the answer's schema, the decisions), asked of
// nobody's permission; the turn is handed back (the one-slot worker
// completes another turn meanwhile); the person's answer resumes it and
// the model's next request carries the answer as the call's result.
func TestRequestUserInputParksUntilThePersonAnswers(t *testing.T) {
	rt := startRuntime(t)
	model := &recording{Provider: scripted(t, inputScript)}
	rt.startStoppableWorker(t, "w1", workspace(t), func(c *worker.Config) { c.MaxTurns = 1; c.Provider = model })
	tl := rt.follow(t, "s1")
	ctx := context.Background()

	req := askUntilParked(t, rt, tl, "main", "turn-q", "colour please")
	ar := req.GetActionRequired()
	if ar.GetActionType() != worker.InputActionType || ar.GetPrompt() != "Which colour?" || ar.GetJsonSchema() != worker.InputSchema ||
		!slices.Equal(ar.GetDecisions(), []string{worker.InputAnswer, worker.InputNoAnswer}) || ar.GetDecisionOnTimeout() != "" {
		t.Fatalf("action.required = %v, want the question as an input action without a timeout", req)
	}
	rt.submit(t, "other", "turn-quick", "hello")
	if end := tl.untilTurnEnds("turn-quick"); end.GetType() != "turn.completed" {
		t.Fatalf("the turn beside the parked one ended %v", end)
	}
	if _, err := rt.control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: req.GetActionId(), Decision: worker.InputAnswer, PayloadJson: `{"colour":"teal"}`}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("an answer that is not text: %v, want InvalidArgument", err)
	}
	if _, err := rt.control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: req.GetActionId(), Decision: worker.InputAnswer, PayloadJson: `"teal, please"`}); err != nil {
		t.Fatal(err)
	}
	end := tl.untilTurnEnds("turn-q")
	if end.GetType() != "turn.completed" || end.GetTurnCompleted().GetSummary() != "noted" {
		t.Fatalf("the turn ended %v after %v", end, testkit.Types(tl.seen))
	}
	if got := model.toolMessages(); !slices.Equal(got, []string{"teal, please"}) {
		t.Fatalf("the model's tool results %q, want the person's answer", got)
	}
	if n := tl.count("turn-q", "tool.result"); n != 1 {
		t.Fatalf("%d tool.result, want 1 (%v)", n, testkit.Types(tl.seen))
	}
	at, err := rt.control.GetTurnAttempts(ctx, &controlv1.GetTurnAttemptsRequest{TurnId: "turn-q", MinSequence: end.GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	if runs := at.GetAttempts().GetAttempts(); len(runs) < 2 || runs[0].GetStatus() != controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_PARKED {
		t.Fatalf("runs %v, want the first parked and a later one completing the turn", runs)
	}

	// With choices, the person picks one; the model is told which.
	req = askUntilParked(t, rt, tl, "pick", "turn-p", "pick one")
	if d := req.GetActionRequired().GetDecisions(); !slices.Equal(d, []string{"red", "blue", worker.InputNoAnswer}) {
		t.Fatalf("decisions %q, want the choices and no_answer", d)
	}
	respond(t, rt, req.GetActionId(), "blue")
	if end := tl.untilTurnEnds("turn-p"); end.GetType() != "turn.completed" || end.GetTurnCompleted().GetSummary() != "picked" {
		t.Fatalf("the turn ended %v after %v", end, testkit.Types(tl.seen))
	}
	if got := model.toolMessages(); !slices.Equal(got, []string{"the user chose: blue"}) {
		t.Fatalf("the model's tool results %q, want the choice", got)
	}
}

// A question nobody answers within its timeout resolves with its
// decision_on_timeout (the runtime's deadline, no worker holding the
// turn), and the model is told nobody answered: the turn goes on and
// completes; no call fails.
func TestRequestUserInputTimesOutIntoAnAnswer(t *testing.T) {
	rt := startRuntime(t)
	model := &recording{Provider: scripted(t, inputScript)}
	rt.startStoppableWorker(t, "w1", workspace(t), func(c *worker.Config) { c.Provider = model })
	tl := rt.follow(t, "s1")
	req := askUntilParked(t, rt, tl, "main", "turn-l", "late question")
	if ar := req.GetActionRequired(); ar.GetDecisionOnTimeout() != worker.InputNoAnswer || ar.GetExpiresAt() == nil {
		t.Fatalf("action.required = %v, want a deadline deciding no_answer", req)
	}
	resolved := tl.until("action.resolved").GetActionResolved()
	if resolved.GetOutcome() != eventsv1.ActionOutcome_ACTION_OUTCOME_TIMED_OUT || resolved.GetDecision() != worker.InputNoAnswer {
		t.Fatalf("action.resolved = %v, want timed out with no_answer", resolved)
	}
	end := tl.untilTurnEnds("turn-l")
	if end.GetType() != "turn.completed" || end.GetTurnCompleted().GetSummary() != "nobody came" {
		t.Fatalf("the turn ended %v after %v", end, testkit.Types(tl.seen))
	}
	if got := model.toolMessages(); !slices.Equal(got, []string{"no answer within 300ms: the user did not answer in time"}) {
		t.Fatalf("the model's tool results %q, want that nobody answered in time", got)
	}
	if n := tl.count("turn-l", "tool.failed"); n != 0 {
		t.Fatalf("%d tool.failed, want none (%v)", n, testkit.Types(tl.seen))
	}
}

// A question the model gets wrong is a tool.failed{invalid_arguments}
// naming what is wrong, the model goes on, and nobody is asked anything.
func TestRequestUserInputRefusesBadArguments(t *testing.T) {
	rt := startRuntime(t)
	model := &recording{Provider: scripted(t, inputScript)}
	rt.startStoppableWorker(t, "w1", workspace(t), func(c *worker.Config) { c.Provider = model })
	tl := rt.follow(t, "s1")
	rt.submit(t, "main", "turn-b", "ask badly")
	if end := tl.untilTurnEnds("turn-b"); end.GetType() != "turn.completed" || end.GetTurnCompleted().GetSummary() != "gave up" {
		t.Fatalf("the turn ended %v after %v", end, testkit.Types(tl.seen))
	}
	var got []string
	for _, ev := range tl.seen {
		if ev.GetType() == "tool.failed" {
			if ev.GetToolFailed().GetCategory() != "invalid_arguments" {
				t.Fatalf("tool.failed %v, want invalid_arguments", ev)
			}
			got = append(got, ev.GetToolFailed().GetMessage())
		}
	}
	want := []string{"question is required", `choices[1] "a" is given twice`, `choices[0] "no_answer" is reserved`, "timeout_ms 999999999999 is outside", "unknown field"}
	if len(got) != len(want) {
		t.Fatalf("tool.failed messages %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Fatalf("tool.failed[%d] = %q, want it to say %q", i, got[i], want[i])
		}
	}
	if n := tl.count("turn-b", "action.required"); n != 0 {
		t.Fatalf("%d action.required for bad questions, want none", n)
	}
}
