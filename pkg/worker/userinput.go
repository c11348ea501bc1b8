// request_user_input: the agent asks the user a question and the turn
// waits for the answer. The call opens an action of type "input" (the
// question as its prompt, the answer's JSON Schema, the choices as its
// decisions); the turn is handed back while it waits (park.go: no slot,
// lease or stream held), or waits in place when it may not park; the
// person's answer (RespondAction's decision and payload) is the call's
// result for the model. A timeout resolves the action with its
// decision_on_timeout, and the model is told nobody answered in time.

package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/enums"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

const (
	requestUserInputName = "request_user_input"
	// InputActionType is the action_type of the action a
	// request_user_input call opens.
	InputActionType = "input"
	// InputAnswer is the decision of a free-text answer (a question
	// without choices); InputNoAnswer declines to answer, and is what a
	// timeout decides.
	InputAnswer   = "answer"
	InputNoAnswer = "no_answer"
	// InputSchema is the JSON Schema of an answer's payload: its text (a
	// JSON string), or nothing.
	InputSchema = `{"type":["string","null"],"maxLength":16384}`

	maxInputChoices = 15 // an action offers at most 16 decisions, one is no_answer
	maxInputTimeout = 7 * 24 * time.Hour
)

type requestUserInputArgs struct {
	Question  string   `json:"question"`
	Choices   []string `json:"choices"`
	TimeoutMs int64    `json:"timeout_ms"`
}

func parseRequestUserInput(raw json.RawMessage) (requestUserInputArgs, error) {
	var a requestUserInputArgs
	if err := decodeStrict(raw, &a); err != nil {
		return a, err
	}
	bad := func(format string, v ...any) error {
		return &tools.Failure{Category: tools.InvalidArguments, Message: fmt.Sprintf(format, v...)}
	}
	switch {
	case strings.TrimSpace(a.Question) == "":
		return a, bad("question is required")
	case len(a.Question) > 16000:
		return a, bad("question is %d bytes; at most 16000", len(a.Question))
	case len(a.Choices) > maxInputChoices:
		return a, bad("choices has %d entries; at most %d", len(a.Choices), maxInputChoices)
	case a.TimeoutMs < 0 || time.Duration(a.TimeoutMs)*time.Millisecond > maxInputTimeout:
		return a, bad("timeout_ms %d is outside 1..%d", a.TimeoutMs, maxInputTimeout.Milliseconds())
	}
	for i, c := range a.Choices {
		switch {
		case c == "" || len(c) > 64:
			return a, bad("choices[%d] must be 1 to 64 bytes", i)
		case c == InputNoAnswer:
			return a, bad("choices[%d] %q is reserved: it declines to answer", i, c)
		case slices.Contains(a.Choices[:i], c):
			return a, bad("choices[%d] %q is given twice", i, c)
		}
	}
	return a, nil
}

// requestUserInput is the registry entry of request_user_input.
type requestUserInput struct{}

func (requestUserInput) Spec() tools.Spec {
	return tools.Spec{Name: requestUserInputName, Description: "Ask the user a question and wait for the answer, which is this call's result. " +
		"With choices the user picks one of them (and may add text). With timeout_ms, the call answers that nobody answered when the time is up.",
		Schema:    `{"type":"object","properties":{"question":{"type":"string"},"choices":{"type":"array","items":{"type":"string"},"maxItems":15},"timeout_ms":{"type":"integer","minimum":1}},"required":["question"],"additionalProperties":false}`,
		Interrupt: "cancel"}
}

// Plan: the call touches nothing of the sandbox; it is judged as a read of
// nothing, which the default policy allows (a person is asked anyway).
func (requestUserInput) Plan(_ *tools.Sandbox, raw json.RawMessage) (tools.Access, error) {
	if _, err := parseRequestUserInput(raw); err != nil {
		return tools.Access{}, err
	}
	return tools.Access{Access: eventsv1.Access_ACCESS_READ}, nil
}

func (requestUserInput) Run(context.Context, *tools.Sandbox, json.RawMessage) (tools.Result, error) {
	return tools.Result{}, &tools.Failure{Category: tools.InvalidArguments, Message: requestUserInputName + " runs only inside a turn"}
}

// inputActionID is the action of a call: the same call asking again (a
// run lost before it parked) is the same action.
func inputActionID(callID string) string {
	id := "in_" + callID
	if len(id) > 128 {
		sum := sha256.Sum256([]byte(callID))
		id = "in_" + hex.EncodeToString(sum[:])
	}
	return id
}

// inputCall runs a request_user_input call (allowed; its sandbox
// recorded) or goes on with one a parked run left (resumed): it opens the
// action and parks the call (*mustWait), or reads the answer and reports
// it as the call's result.
func (tu *turn) inputCall(ctx context.Context, step, id string, msg provider.Message, c provider.ToolCall, resumed *parkedCall,
	failed func(category, message string) (provider.Message, error)) (provider.Message, error) {
	res, err := tu.askUser(ctx, step, id, c, resumed)
	return tu.answeredCall(ctx, step, id, msg, res, err, "the person's answer", "input_unavailable", failed)
}

// answeredCall reports a call whose result is a person's (or a client's)
// answer to an action: its result, its failure, or *mustWait when it
// parks. waited says what the call waited for; unavailable is the
// category of an error reaching control.
func (tu *turn) answeredCall(ctx context.Context, step, id string, msg provider.Message, res tools.Result, err error, waited, unavailable string,
	failed func(category, message string) (provider.Message, error)) (provider.Message, error) {
	var mw *mustWait
	var f *tools.Failure
	switch {
	case errors.As(err, &mw):
		return msg, mw
	case ctx.Err() != nil:
		return failed(tools.Cancelled, "the turn was interrupted while the call waited for "+waited)
	case errors.As(err, &f):
		return failed(f.Category, f.Message)
	case err != nil:
		return failed(unavailable, status.Convert(err).Message())
	}
	return tu.toolResult(ctx, step, id, msg, res)
}

func (tu *turn) askUser(ctx context.Context, step, id string, c provider.ToolCall, resumed *parkedCall) (tools.Result, error) {
	a, err := parseRequestUserInput(json.RawMessage(c.Arguments))
	if err != nil {
		return tools.Result{}, err
	}
	timeout := time.Duration(a.TimeoutMs) * time.Millisecond
	actionID, from := "", uint64(0)
	if resumed != nil {
		actionID, from = resumed.ActionID, resumed.From
	} else {
		decisions := append(slices.Clone(a.Choices), InputNoAnswer)
		if len(a.Choices) == 0 {
			decisions = []string{InputAnswer, InputNoAnswer}
		}
		req := &controlv1.RequestActionRequest{
			SessionId: tu.t.GetSessionId(), ThreadId: tu.t.GetThreadId(), TurnId: tu.t.GetTurnId(),
			ActionId: inputActionID(id), ActionType: InputActionType, StepId: step, ToolCallId: id,
			Prompt: a.Question, Decisions: decisions, JsonSchema: InputSchema,
			Context: map[string]string{"tool": requestUserInputName},
		}
		if timeout > 0 {
			req.Timeout = durationpb.New(timeout)
			req.DecisionOnTimeout = InputNoAnswer
		}
		resp, err := tu.openAction(ctx, req)
		if err != nil {
			return tools.Result{}, err
		}
		act := resp.GetAction()
		actionID, from = act.GetActionId(), resp.GetSequence()
		if act.GetStatus() != controlv1.ActionStatus_ACTION_STATUS_PENDING {
			// The same call asking again finds its action answered.
			return inputResult(actionOutcome(act.GetStatus()), act.GetDecision(), act.GetPayloadJson(), timeout)
		}
		if tu.mayPark() {
			return tools.Result{}, &mustWait{call: parkedCall{CallID: id, ActionID: actionID, From: from, Own: true, Input: true}}
		}
	}
	var answer *eventsv1.ActionResolved
	err = tu.awaitAnswer(ctx, actionID, from, func(ev *eventsv1.RuntimeEvent) bool {
		answer = ev.GetActionResolved()
		return answer != nil
	})
	if err != nil {
		return tools.Result{}, err
	}
	if answer.GetOutcome() == eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED {
		tu.checkNow(ctx) // the turn was interrupted or ended
	}
	return inputResult(answer.GetOutcome(), answer.GetDecision(), answer.GetPayloadJson(), timeout)
}

// actionOutcome is the outcome of an action no longer pending.
func actionOutcome(s controlv1.ActionStatus) eventsv1.ActionOutcome {
	switch s {
	case controlv1.ActionStatus_ACTION_STATUS_RESOLVED:
		return eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED
	case controlv1.ActionStatus_ACTION_STATUS_TIMED_OUT:
		return eventsv1.ActionOutcome_ACTION_OUTCOME_TIMED_OUT
	case controlv1.ActionStatus_ACTION_STATUS_CANCELLED:
		return eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED
	}
	return eventsv1.ActionOutcome_ACTION_OUTCOME_UNSPECIFIED
}

// inputResult is what the model gets for the person's answer: the text;
// the choice (and any text); that they declined; or, on a timeout, that
// nobody answered in time. An action cancelled (the turn interrupted or
// ended) is a failure.
func inputResult(outcome eventsv1.ActionOutcome, decision, payload string, timeout time.Duration) (tools.Result, error) {
	text := ""
	if payload != "" && payload != "null" {
		var s string
		if json.Unmarshal([]byte(payload), &s) == nil {
			text = s
		} else {
			text = payload
		}
	}
	var out string
	switch {
	case outcome == eventsv1.ActionOutcome_ACTION_OUTCOME_TIMED_OUT:
		out = "no answer within " + timeout.String() + ": the user did not answer in time"
	case outcome != eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED:
		return tools.Result{}, &tools.Failure{Category: "input_unanswered", Message: "the question was " + enums.Word(outcome)}
	case decision == InputNoAnswer:
		out = "the user declined to answer"
		if text != "" {
			out += ": " + text
		}
	case decision == InputAnswer:
		out = text
		if out == "" {
			out = "(the user answered with no text)"
		}
	default:
		out = "the user chose: " + decision
		if text != "" {
			out += "\n" + text
		}
	}
	return tools.Result{Output: out, Bytes: len(out)}, nil
}
