// MCP elicitation: an MCP server asks, in the middle of a tool call, for
// structured input from the user (pkg/worker/mcp, elicit.go). The worker
// asks a person through the runtime: an action of type "elicitation" on
// the turn (the server's message as the prompt, prefixed with which server
// asks; its requestedSchema as the payload's schema; decisions accept,
// decline and cancel; a timeout deciding decline), and the answer
// (RespondAction's decision and payload) is what the server gets. The
// server holds its call open meanwhile, so the wait is held in place: the
// turn cannot be handed back (park.go) while a call is in flight.

package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/worker/mcp"
)

const (
	// ElicitationActionType is the action_type of the action an MCP
	// server's elicitation opens.
	ElicitationActionType = "elicitation"
	// Context keys of an elicitation's action: the server that asks, the
	// tool being called and the call's id.
	ElicitationContextServer = "mcp_server"
	ElicitationContextTool   = "tool"
	ElicitationContextCall   = "tool_call_id"
)

// ElicitationDecisions are an elicitation action's decisions: the MCP
// answers. A timeout decides decline.
var ElicitationDecisions = []string{mcp.ElicitAccept, mcp.ElicitDecline, mcp.ElicitCancel}

// withElicitor is ctx for a call of the turn: an MCP tool's server may ask
// a person through it.
func (tu *turn) withElicitor(ctx context.Context, step, callID string) context.Context {
	return mcp.WithElicitor(ctx, func(ctx context.Context, e mcp.Elicitation) (mcp.ElicitAnswer, error) {
		return tu.elicit(ctx, step, callID, e)
	})
}

// elicitActionID is the action of a call's seq-th elicitation: the same
// one asked again (a retried RequestAction) is the same action.
func elicitActionID(callID string, seq int) string {
	id := "el_" + callID + "_" + strconv.Itoa(seq)
	if len(id) > 128 {
		sum := sha256.Sum256([]byte(callID))
		id = "el_" + hex.EncodeToString(sum[:]) + "_" + strconv.Itoa(seq)
	}
	return id
}

// elicitationSchema is the action's payload schema: the server's, which
// also takes null, so that decline and cancel need no payload (control
// checks every answer's payload against the schema).
func elicitationSchema(schema json.RawMessage) (string, error) {
	var m map[string]any
	if err := json.Unmarshal(schema, &m); err != nil {
		return "", err
	}
	if m == nil {
		m = map[string]any{}
	}
	if t, ok := m["type"]; !ok || t == "object" {
		m["type"] = []any{"object", "null"}
	}
	raw, err := json.Marshal(m)
	return string(raw), err
}

// elicit asks a person for e and waits, in place, for the answer.
func (tu *turn) elicit(ctx context.Context, step, callID string, e mcp.Elicitation) (mcp.ElicitAnswer, error) {
	schema, err := elicitationSchema(e.Schema)
	if err != nil {
		return mcp.ElicitAnswer{}, fmt.Errorf("the requested schema: %w", err)
	}
	req := &controlv1.RequestActionRequest{
		SessionId: tu.t.GetSessionId(), ThreadId: tu.t.GetThreadId(), TurnId: tu.t.GetTurnId(),
		ActionId: elicitActionID(callID, e.Seq), ActionType: ElicitationActionType, StepId: step, ToolCallId: callID,
		// A person must see that the server speaks, not the runtime.
		Prompt:    clip(fmt.Sprintf("The MCP server %q asks, during its tool %s:\n\n%s", e.Server, e.Tool, e.Message), 16000),
		Decisions: ElicitationDecisions, JsonSchema: schema,
		Context: map[string]string{ElicitationContextServer: e.Server, ElicitationContextTool: e.Tool, ElicitationContextCall: callID},
	}
	if e.Timeout > 0 {
		req.Timeout, req.DecisionOnTimeout = durationpb.New(e.Timeout), mcp.ElicitDecline
	}
	resp, err := tu.openAction(ctx, req)
	if err != nil {
		return mcp.ElicitAnswer{}, err
	}
	act := resp.GetAction()
	if act.GetStatus() != controlv1.ActionStatus_ACTION_STATUS_PENDING {
		return elicitAnswer(actionOutcome(act.GetStatus()), act.GetDecision(), act.GetPayloadJson()), nil
	}
	var answer *eventsv1.ActionResolved
	err = tu.awaitAnswer(ctx, act.GetActionId(), resp.GetSequence(), func(ev *eventsv1.RuntimeEvent) bool {
		answer = ev.GetActionResolved()
		return answer != nil
	})
	if err != nil {
		return mcp.ElicitAnswer{}, err
	}
	if answer.GetOutcome() == eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED {
		tu.checkNow(ctx) // the turn was interrupted or ended
	}
	return elicitAnswer(answer.GetOutcome(), answer.GetDecision(), answer.GetPayloadJson()), nil
}

// elicitAnswer is the server's answer from the action's: the decision
// (a timeout's is decline), with accept the payload as the content; an
// action cancelled (the turn interrupted or ended) answers cancel.
func elicitAnswer(outcome eventsv1.ActionOutcome, decision, payload string) mcp.ElicitAnswer {
	switch {
	case outcome == eventsv1.ActionOutcome_ACTION_OUTCOME_TIMED_OUT:
		return mcp.ElicitAnswer{Action: mcp.ElicitDecline}
	case outcome != eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED:
		return mcp.ElicitAnswer{Action: mcp.ElicitCancel}
	case decision == mcp.ElicitAccept:
		var content map[string]any
		if payload != "" && json.Unmarshal([]byte(payload), &content) != nil {
			return mcp.ElicitAnswer{Action: mcp.ElicitCancel}
		}
		return mcp.ElicitAnswer{Action: mcp.ElicitAccept, Content: content}
	case decision == mcp.ElicitDecline:
		return mcp.ElicitAnswer{Action: mcp.ElicitDecline}
	}
	return mcp.ElicitAnswer{Action: mcp.ElicitCancel}
}
