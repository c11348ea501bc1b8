// Client tools: tools the turn's submitter offers and runs itself (the
// turn's option clienttool.Option; an AG-UI front end's tools, pkg/agui).
// The model sees them beside the worker's own; a call to one is not run
// here: it opens an action of type clienttool.ActionType carrying the
// call, and the turn is handed back as an approval's is (park.go) until
// the submitter answers with the result as the payload.

package worker

import (
	"context"
	"fmt"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"

	"github.com/agentruntime/agentruntime/pkg/clienttool"
	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// clientTools reads the turn's client tools: the ones offered (a name the
// worker's own tools take stays the worker's) and a notice for each that
// is not. Control checked the option at submit; a bad one fails the turn.
func (tu *turn) clientTools() ([]provider.Tool, []string, error) {
	raw, ok := tu.t.GetOptions()[clienttool.Option]
	if !ok {
		return nil, nil, nil
	}
	ts, err := clienttool.Parse(raw)
	if err != nil {
		return nil, nil, &turnFailure{category: "invalid_client_tools", message: "option " + clienttool.Option + err.Error()}
	}
	tu.client = map[string]bool{}
	var specs []provider.Tool
	var notices []string
	for _, t := range ts {
		if _, own := tu.tools[t.Name]; own {
			notices = append(notices, fmt.Sprintf("the client tool %s is not offered: the worker has a tool of that name", t.Name))
			continue
		}
		tu.client[t.Name] = true
		specs = append(specs, provider.Tool{Name: t.Name, Description: t.Description, Schema: t.Schema()})
	}
	return specs, notices, nil
}

// callClient is a call to a client tool: it opens the action that asks
// the submitter to run it and parks the call (*mustWait), or, for a call
// a parked run left (resumed) or one that waits in place, reads the
// answer: the payload is the tool's result.
func (tu *turn) callClient(ctx context.Context, step, id string, c provider.ToolCall, resumed *parkedCall) (tools.Result, error) {
	actionID, from := "", uint64(0)
	if resumed != nil {
		actionID, from = resumed.ActionID, resumed.From
	} else {
		req := &controlv1.RequestActionRequest{
			SessionId: tu.t.GetSessionId(), ThreadId: tu.t.GetThreadId(), TurnId: tu.t.GetTurnId(),
			ActionId: clienttool.ActionID(id), ActionType: clienttool.ActionType, StepId: step, ToolCallId: id,
			Prompt:    clip("Run the client tool "+c.Name+" and answer with its result.", 16000),
			Decisions: []string{clienttool.Decision}, JsonSchema: clienttool.PayloadSchema,
			Context: map[string]string{clienttool.ContextTool: c.Name, clienttool.ContextArguments: clip(c.Arguments, 4096)},
		}
		resp, err := tu.openAction(ctx, req)
		if err != nil {
			return tools.Result{}, err
		}
		act := resp.GetAction()
		actionID, from = act.GetActionId(), resp.GetSequence()
		if act.GetStatus() != controlv1.ActionStatus_ACTION_STATUS_PENDING {
			// The same call asking again (a run lost before it parked)
			// finds its action answered.
			return clientResult(act.GetStatus() == controlv1.ActionStatus_ACTION_STATUS_RESOLVED, enums.Word(act.GetStatus()), act.GetPayloadJson())
		}
		if tu.mayPark() {
			return tools.Result{}, &mustWait{call: parkedCall{CallID: id, ActionID: actionID, From: from, Own: true, Client: true}}
		}
	}
	var answer *eventsv1.ActionResolved
	err := tu.awaitAnswer(ctx, actionID, from, func(ev *eventsv1.RuntimeEvent) bool {
		answer = ev.GetActionResolved()
		return answer != nil
	})
	if err != nil {
		return tools.Result{}, err
	}
	if answer.GetOutcome() == eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED {
		tu.checkNow(ctx) // the turn was interrupted or ended
	}
	return clientResult(answer.GetOutcome() == eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED, enums.Word(answer.GetOutcome()), answer.GetPayloadJson())
}

// openAction opens an action a call of the turn waits on (RequestAction,
// retried while control is unavailable), once the call's own facts are in
// the log before it.
func (tu *turn) openAction(ctx context.Context, req *controlv1.RequestActionRequest) (*controlv1.RequestActionResponse, error) {
	if err := tu.flush(ctx); err != nil {
		return nil, err
	}
	var resp *controlv1.RequestActionResponse
	err := tu.w.retryInfra(ctx, "control.RequestAction", func(ctx context.Context) (err error) {
		resp, err = tu.w.control.RequestAction(ctx, req)
		return err
	})
	return resp, err
}

// clientResult is a client tool call's result from its action's answer.
func clientResult(resolved bool, outcome, payload string) (tools.Result, error) {
	if !resolved {
		return tools.Result{}, &tools.Failure{Category: "client_tool_unanswered", Message: "the client tool call was " + outcome}
	}
	out := clienttool.Result(payload)
	return tools.Result{Output: out, Bytes: len(out)}, nil
}
