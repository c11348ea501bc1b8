package agui

import (
	"slices"

	"github.com/agentruntime/agentruntime/pkg/clienttool"
	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// translator turns one turn's runtime events into AG-UI events, keeping
// what it has opened (text and reasoning messages, tool calls, steps) so
// that each is opened and closed once. It is pure: the handler feeds it
// the events in log order, from the start of the turn.
//
// Ids are the runtime's, so a replay yields the same ids: a text message
// is its model step (step_id), a reasoning message the step id with
// "-reasoning", a tool call its tool_call_id, a tool result message the
// call id with "-result".
type translator struct {
	texts     ordered // open text messages (step ids)
	reasoning ordered // open reasoning messages (their ids)
	calls     ordered // tool calls started and not ended
	steps     ordered // open steps (their names)
	callName  map[string]string
	callStep  map[string]string
	// client are the calls of front-end tools: the front end has their
	// results (its own tool messages), so none is sent back.
	client map[string]bool
}

func newTranslator() *translator {
	return &translator{callName: map[string]string{}, callStep: map[string]string{}, client: map[string]bool{}}
}

// clientCall notes the call of a front-end tool an action asks for.
func (t *translator) clientCall(ev *eventsv1.RuntimeEvent) {
	if ev.GetActionRequired().GetActionType() == clienttool.ActionType || ev.GetActionResolved().GetActionType() == clienttool.ActionType {
		t.client[ev.GetToolCallId()] = true
	}
}

func modelStep(stepID string) string      { return "model:" + stepID }
func toolStep(name, callID string) string { return "tool:" + name + ":" + callID }
func reasoningID(stepID string) string    { return stepID + "-reasoning" }
func resultID(callID string) string       { return callID + "-result" }

// translate maps one event that does not end the run. Events it has no
// AG-UI counterpart for map to nothing.
func (t *translator) translate(ev *eventsv1.RuntimeEvent) []Event {
	step := ev.GetStepId()
	switch ev.GetType() {
	case events.TypeModelRequested:
		return t.openStep(modelStep(step))
	case events.TypeReasoningDelta:
		text := ev.GetReasoningDelta().GetText()
		if text == "" {
			return nil
		}
		id := reasoningID(step)
		var out []Event
		if !t.reasoning.has(id) {
			t.reasoning.add(id)
			out = append(out, Event{Type: ReasoningStart, MessageID: id}, Event{Type: ReasoningMessageStart, MessageID: id, Role: "reasoning"})
		}
		return append(out, Event{Type: ReasoningMessageContent, MessageID: id, Delta: text})
	case events.TypeModelDelta:
		text := ev.GetModelDelta().GetText()
		if text == "" {
			return nil
		}
		out := t.closeReasoning(reasoningID(step))
		if !t.texts.has(step) {
			t.texts.add(step)
			out = append(out, Event{Type: TextMessageStart, MessageID: step, Role: "assistant"})
		}
		return append(out, Event{Type: TextMessageContent, MessageID: step, Delta: text})
	case events.TypeModelCompleted, events.TypeModelFailed:
		out := t.closeReasoning(reasoningID(step))
		out = append(out, t.closeText(step)...)
		return append(out, t.closeStep(modelStep(step))...)
	case events.TypeToolStarted:
		id, name := ev.GetToolCallId(), ev.GetToolStarted().GetToolName()
		if id == "" || t.callName[id] != "" {
			return nil
		}
		t.callName[id], t.callStep[id] = name, step
		t.calls.add(id)
		out := []Event{{Type: ToolCallStart, ToolCallID: id, ToolCallName: name, ParentMessageID: parentOf(step)}}
		return append(out, t.openStep(toolStep(name, id))...)
	case events.TypeToolArgs:
		id := ev.GetToolCallId()
		if !t.calls.has(id) {
			return nil
		}
		var out []Event
		if args := ev.GetToolArgs().GetSafeArgsJson(); args != "" {
			out = append(out, Event{Type: ToolCallArgs, ToolCallID: id, Delta: args})
		}
		return append(out, t.endCall(id)...)
	case events.TypeToolResult, events.TypeToolFailed:
		id := ev.GetToolCallId()
		if id == "" {
			return nil
		}
		content := ev.GetToolResult().GetPreview()
		if ev.GetType() == events.TypeToolFailed {
			f := ev.GetToolFailed()
			content = "error (" + f.GetCategory() + "): " + f.GetMessage()
		}
		out := t.endCall(id)
		if !t.client[id] || ev.GetType() == events.TypeToolFailed {
			out = append(out, Event{Type: ToolCallResult, MessageID: resultID(id), ToolCallID: id, Role: "tool", Content: &content})
		}
		if name, ok := t.callName[id]; ok {
			out = append(out, t.closeStep(toolStep(name, id))...)
		}
		return out
	}
	return nil
}

// parentOf is the assistant message a tool call belongs to: its model
// step's text message (the client creates it when the step had no text).
func parentOf(step string) string { return step }

func (t *translator) openStep(name string) []Event {
	if t.steps.has(name) {
		return nil
	}
	t.steps.add(name)
	return []Event{{Type: StepStarted, StepName: name}}
}

func (t *translator) closeStep(name string) []Event {
	if !t.steps.remove(name) {
		return nil
	}
	return []Event{{Type: StepFinished, StepName: name}}
}

func (t *translator) closeText(id string) []Event {
	if !t.texts.remove(id) {
		return nil
	}
	return []Event{{Type: TextMessageEnd, MessageID: id}}
}

func (t *translator) closeReasoning(id string) []Event {
	if !t.reasoning.remove(id) {
		return nil
	}
	return []Event{{Type: ReasoningMessageEnd, MessageID: id}, {Type: ReasoningEnd, MessageID: id}}
}

func (t *translator) endCall(id string) []Event {
	if !t.calls.remove(id) {
		return nil
	}
	return []Event{{Type: ToolCallEnd, ToolCallID: id}}
}

// ordered is a set that remembers insertion order.
type ordered struct{ ids []string }

func (o *ordered) has(id string) bool { return slices.Contains(o.ids, id) }
func (o *ordered) add(id string) {
	if !o.has(id) {
		o.ids = append(o.ids, id)
	}
}
func (o *ordered) list() []string { return slices.Clone(o.ids) }

func (o *ordered) remove(id string) bool {
	i := slices.Index(o.ids, id)
	if i < 0 {
		return false
	}
	o.ids = slices.Delete(o.ids, i, i+1)
	return true
}
