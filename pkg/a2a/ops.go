package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// started is a send's effect: the task it made or went on with, where to
// follow it from, and the items already seen (a continued task's items
// before the answer).
type started struct {
	ref   taskRef
	from  uint64
	after *cursor
	// user is the message sent, the task's history.
	user Message
}

// startSend makes a message a turn, or the answer (or steer) of the turn
// it continues, and the push notification config of its configuration
// for the task. The config is made once the task is (its id is the
// turn's): one the API refuses (a URL outside --hook-allow-hosts) fails
// the send after the task started; the same message sent again is the
// same task.
func (h *Handler) startSend(ctx context.Context, p *SendMessageRequest) (*started, *rpcError) {
	var (
		field string
		push  *TaskPushNotificationConfig
	)
	if c := p.Configuration; c != nil {
		field, push = "params.configuration.taskPushNotificationConfig", c.TaskPushNotificationConfig
		if push == nil {
			field, push = "params.configuration.pushNotificationConfig", c.PushNotificationConfig
		}
	}
	if push != nil && push.URL == "" {
		return nil, invalidParams(field+".url", "required")
	}
	st, err := h.startTurn(ctx, p)
	if err != nil || push == nil {
		return st, err
	}
	cfg := *push
	cfg.TaskID = st.ref.turnID
	if _, err := h.createPushConfig(ctx, field, &cfg); err != nil {
		return nil, err
	}
	return st, nil
}

// startTurn is startSend but for the push notification config.
func (h *Handler) startTurn(ctx context.Context, p *SendMessageRequest) (*started, *rpcError) {
	m := p.Message
	if m == nil {
		return nil, invalidParams("params.message", "required")
	}
	if m.MessageID == "" {
		return nil, invalidParams("params.message.messageId", "required")
	}
	if len(m.MessageID) > 200 {
		return nil, invalidParams("params.message.messageId", "longer than 200 characters")
	}
	if m.Role != RoleUser && m.Role != "user" {
		return nil, invalidParams("params.message.role", "must be %s", RoleUser)
	}
	if len(m.Parts) == 0 {
		return nil, invalidParams("params.message.parts", "required: at least one text or data part")
	}
	var session, thread string
	if m.ContextID != "" {
		var err *rpcError
		if session, thread, err = parseContext("params.message.contextId", m.ContextID); err != nil {
			return nil, err
		}
	}
	if m.TaskID != "" {
		return h.continueTask(ctx, m, session, thread)
	}
	input, err := inputOf(m.Parts)
	if err != nil {
		return nil, err
	}
	if session == "" {
		session, thread = newContext()
	}
	resp, serr := h.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{
		SessionId: session, ThreadId: thread,
		// The message id: a retried send of the same message is the same
		// turn, not a second one.
		IdempotencyKey: "a2a:" + m.MessageID,
		Input:          input,
		Metadata:       map[string]string{"a2a_message_id": m.MessageID},
	})
	if serr != nil {
		return nil, fromStatus(serr, "")
	}
	ref := taskRef{turnID: resp.GetTurn().GetTurnId(), sessionID: session, threadID: thread}
	user := *m
	user.ContextID, user.TaskID, user.Role = ref.contextID(), ref.turnID, RoleUser
	from, _, rerr := h.start(ctx, ref, resp.GetSequence())
	if rerr != nil {
		return nil, rerr
	}
	return &started{ref: ref, from: from, user: user}, nil
}

// continueTask answers the action the task waits for with the message, or
// steers the working turn with it.
func (h *Handler) continueTask(ctx context.Context, m *Message, session, thread string) (*started, *rpcError) {
	if err := checkTaskID("params.message.taskId", m.TaskID); err != nil {
		return nil, err
	}
	ref, err := h.locate(ctx, m.TaskID)
	if err != nil {
		return nil, err
	}
	if session != "" && (session != ref.sessionID || thread != ref.threadID) {
		return nil, invalidParams("params.message.taskId", "task %s is of context %s, not %s", ref.turnID, ref.contextID(), m.ContextID)
	}
	from, _, err := h.start(ctx, ref, 0)
	if err != nil {
		return nil, err
	}
	user := *m
	user.ContextID, user.Role = ref.contextID(), RoleUser
	// What the task waits for is read from the log, as the client saw
	// it: the read model may not have the action yet.
	now, err := h.follow(ctx, follow{ref: ref, from: from, until: untilPresent})
	if err != nil {
		return nil, err
	}
	if terminal(now.task.Status.State) {
		return nil, &rpcError{Code: codeUnsupported, Message: "task " + ref.turnID + " has ended (" + now.task.Status.State + "); send a message without taskId to start a new task in context " + ref.contextID(),
			Data: map[string]any{"field": "params.message.taskId"}}
	}
	var pending []*controlv1.Action
	for _, p := range now.pending {
		pending = append(pending, &controlv1.Action{ActionId: p.ID, TurnId: ref.turnID, ActionType: p.Type, Decisions: p.Decisions})
	}
	if len(pending) > 0 {
		a, ans, err := answerOf(m.Parts, pending)
		if err != nil {
			return nil, err
		}
		resp, serr := h.control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: a.GetActionId(), Decision: ans.decision, PayloadJson: ans.payload})
		if serr != nil {
			return nil, fromStatus(serr, ref.turnID)
		}
		// The stream goes on from the answer: the items before it were
		// the input-required the client answers.
		at := max(resp.GetSequence(), 1)
		after := cursor{seq: at - 1, k: int(^uint(0) >> 1)}
		return &started{ref: ref, from: from, after: &after, user: user}, nil
	}
	// Working (or not started): the message steers the turn, if it is the
	// thread's active one (the API checks).
	input, err := inputOf(m.Parts)
	if err != nil {
		return nil, err
	}
	resp, serr := h.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{
		SessionId: ref.sessionID, ThreadId: ref.threadID, IdempotencyKey: "a2a:" + m.MessageID, Input: input,
		BusyPolicy: controlv1.BusyPolicy_BUSY_POLICY_STEER, ExpectedActiveTurnId: ref.turnID,
		Metadata: map[string]string{"a2a_message_id": m.MessageID},
	})
	if serr != nil {
		return nil, fromStatus(serr, ref.turnID)
	}
	if got := resp.GetTurn().GetSteeredInto(); got != ref.turnID {
		return nil, &rpcError{Code: codeUnsupported, Message: "the message was not merged into task " + ref.turnID + " (steered into \"" + got + "\")",
			Data: map[string]any{"field": "params.message.taskId"}}
	}
	after := cursor{seq: resp.GetSequence(), k: int(^uint(0) >> 1)}
	return &started{ref: ref, from: from, after: &after, user: user}, nil
}

// inputOf is a message's parts as a turn's input: text parts as text,
// data parts as JSON.
func inputOf(parts []Part) ([]*eventsv1.InputPart, *rpcError) {
	var in []*eventsv1.InputPart
	for i, p := range parts {
		field := fmt.Sprintf("params.message.parts[%d]", i)
		switch {
		case p.Text != nil:
			if strings.TrimSpace(*p.Text) == "" {
				return nil, invalidParams(field+".text", "empty")
			}
			in = append(in, &eventsv1.InputPart{Content: &eventsv1.InputPart_Text{Text: *p.Text}, MediaType: p.MediaType})
		case len(p.Data) > 0 && string(p.Data) != "null":
			in = append(in, &eventsv1.InputPart{Content: &eventsv1.InputPart_Json{Json: string(p.Data)}, MediaType: "application/json"})
		default:
			return nil, &rpcError{Code: -32005, Message: field + ": only text and data parts are accepted (no files)", Data: map[string]any{"field": field}}
		}
	}
	if len(in) > 64 {
		return nil, invalidParams("params.message.parts", "at most 64 parts")
	}
	return in, nil
}

// answer is how a message answers an action.
type answer struct {
	decision, payload string
}

// answerData is the data part that answers an action explicitly.
type answerData struct {
	ActionID string          `json:"actionId"`
	Decision string          `json:"decision"`
	Payload  json.RawMessage `json:"payload"`
}

// Words that answer an approval when the action offers a decision of
// their kind (docs/a2a.md, "Answering input-required").
var (
	yesWords = []string{"yes", "y", "ok", "approve", "approved", "allow", "allowed", "accept", "go ahead"}
	noWords  = []string{"no", "n", "deny", "denied", "reject", "rejected", "refuse"}
)

// answerOf reads the answer of one of the pending actions from a message:
// a data part {"decision", "payload", "actionId"}, else its text: one of
// the action's decisions, or a yes or a no.
func answerOf(parts []Part, pending []*controlv1.Action) (*controlv1.Action, answer, *rpcError) {
	a := pending[0]
	var text []string
	for i, p := range parts {
		field := fmt.Sprintf("params.message.parts[%d].data", i)
		if p.Text != nil {
			text = append(text, *p.Text)
			continue
		}
		if len(p.Data) == 0 {
			continue
		}
		var d answerData
		if err := json.Unmarshal(p.Data, &d); err != nil || d.Decision == "" {
			return nil, answer{}, invalidParams(field, "an answer is an object with a string decision (and actionId, payload)")
		}
		if d.ActionID != "" {
			i := slices.IndexFunc(pending, func(x *controlv1.Action) bool { return x.GetActionId() == d.ActionID })
			if i < 0 {
				return nil, answer{}, invalidParams(field+".actionId", "the task waits for no action %s", d.ActionID)
			}
			a = pending[i]
		}
		if !slices.Contains(a.GetDecisions(), d.Decision) {
			return nil, answer{}, invalidParams(field+".decision", "%q is not offered; action %s offers %s", d.Decision, a.GetActionId(), strings.Join(a.GetDecisions(), ", "))
		}
		ans := answer{decision: d.Decision}
		if len(d.Payload) > 0 && string(d.Payload) != "null" {
			ans.payload = string(d.Payload)
		}
		return a, ans, nil
	}
	said := strings.ToLower(strings.TrimSpace(strings.Trim(strings.TrimSpace(strings.Join(text, " ")), ".!")))
	if d := decisionOfText(said, a.GetDecisions()); d != "" {
		return a, answer{decision: d}, nil
	}
	return nil, answer{}, invalidParams("params.message.parts", "%q answers none of action %s's decisions (%s): send one of them, yes or no, or a data part {\"decision\": ...}",
		said, a.GetActionId(), strings.Join(a.GetDecisions(), ", "))
}

func decisionOfText(said string, decisions []string) string {
	for _, d := range decisions {
		if strings.EqualFold(said, d) {
			return d
		}
	}
	pick := func(words []string, prefixes ...string) string {
		if !slices.Contains(words, said) {
			return ""
		}
		for _, p := range prefixes {
			for _, d := range decisions {
				if strings.HasPrefix(d, p) {
					return d
				}
			}
		}
		return ""
	}
	if d := pick(yesWords, "allow_once", "allow", "approve", "accept", "yes", "confirm"); d != "" {
		return d
	}
	return pick(noWords, "deny", "reject", "no", "decline")
}
